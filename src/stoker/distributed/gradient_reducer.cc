#include "stoker/distributed/gradient_reducer.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <map>
#include <tuple>
#include <utility>

#include "stoker/util/thread_annotations.h"

namespace stoker {
namespace {

using Clock = std::chrono::steady_clock;

// The owning pointer to an autograd node, as torch hands out a parameter's accumulator:
// std::shared_ptr in torch 2.11, c10::intrusive_ptr in 2.15.
using NodePtr =
    decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

struct GradientReducer::State {
  // Where one parameter's gradient lives in its bucket.
  struct Slot {
    at::Tensor param;
    size_t bucket = 0;
    int64_t offset = 0;  // in elements of the bucket
    bool arrived = false;
  };
  struct Bucket {
    at::Tensor flat;            // the gradients back to back (and the vote, in the last one)
    std::vector<size_t> slots;  // its parameters
    size_t waiting = 0;         // slots whose gradient has not arrived in this round
    bool started = false;
    PendingReduce reduce;
  };

  ProcessGroup* group = nullptr;
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;  // in the order they start: every rank starts them so
  int64_t vote_offset = 0;      // of the vote in the last bucket
  // The accumulators hooked and the hooks' keys, to remove them.
  std::vector<std::pair<NodePtr, uintptr_t>> hooks;

  Mutex mutex;  // guards the fields below and the buckets' round state
  bool armed STOKER_GUARDED_BY(mutex) = false;
  float vote STOKER_GUARDED_BY(mutex) = 0;
  size_t next_start STOKER_GUARDED_BY(mutex) = 0;  // buckets [0, next_start) have started
  size_t started_in_backward STOKER_GUARDED_BY(mutex) = 0;
  Clock::time_point first_start STOKER_GUARDED_BY(mutex);
  Status error STOKER_GUARDED_BY(mutex);  // of a hook

  // Copies slot `s`'s gradient (zeros if it has none) into its bucket.
  void gather(size_t s) STOKER_REQUIRES(mutex) {
    Slot& slot = slots[s];
    at::Tensor target =
        buckets[slot.bucket].flat.narrow(0, slot.offset, slot.param.numel()).view_as(slot.param);
    const at::Tensor& grad = slot.param.grad();
    if (grad.defined()) {
      target.copy_(grad);
    } else {
      target.zero_();
    }
    slot.arrived = true;
    --buckets[slot.bucket].waiting;
  }

  // Starts the buckets that are full, in order; `in_backward`: from a hook.
  void start_ready(bool in_backward) STOKER_REQUIRES(mutex) {
    while (next_start < buckets.size() && buckets[next_start].waiting == 0) {
      Bucket& b = buckets[next_start];
      if (next_start + 1 == buckets.size()) b.flat[vote_offset].fill_(vote);
      if (next_start == 0) first_start = Clock::now();
      b.reduce = group->all_reduce_async(b.flat);
      b.started = true;
      ++next_start;
      if (in_backward) ++started_in_backward;
    }
  }

  // A hook: parameter `s`'s gradient is complete for this backward pass.
  void on_gradient(size_t s) STOKER_EXCLUDES(mutex) {
    MutexLock lock(mutex);
    if (!armed || slots[s].arrived) return;
    try {
      at::NoGradGuard no_grad;
      gather(s);
      start_ready(/*in_backward=*/true);
    } catch (const std::exception& e) {
      if (error.is_ok()) error = io_error(std::string("gradient hook failed: ") + e.what());
    }
  }

  // Tells the state when its parameter's gradient accumulator has run.
  class ReadyHook : public torch::autograd::FunctionPostHook {
   public:
    ReadyHook(State* state, size_t slot) : state_(state), slot_(slot) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                              const torch::autograd::variable_list&) override {
      state_->on_gradient(slot_);
      return outputs;
    }

   private:
    State* state_;
    size_t slot_;
  };
};

GradientReducer::GradientReducer(ProcessGroup& group, const std::vector<at::Tensor>& params,
                                 GradientReducerOptions options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.group = &group;
  for (const at::Tensor& p : params) {
    if (!p.requires_grad()) continue;
    if (!p.is_leaf())
      throw Error(invalid_argument("GradientReducer: a parameter is not a leaf tensor"));
    s.slots.push_back(State::Slot{p});
  }
  if (s.slots.empty())
    throw Error(invalid_argument("GradientReducer: no parameter requires a gradient"));

  // Buckets in reverse parameter order, one open bucket per dtype and device.
  std::map<std::tuple<int, int, int>, size_t> open;  // (dtype, device type, index) -> bucket
  std::vector<int64_t> sizes;
  std::vector<at::TensorOptions> kinds;
  for (size_t i = s.slots.size(); i-- > 0;) {
    State::Slot& slot = s.slots[i];
    const at::Tensor& p = slot.param;
    const auto key = std::make_tuple(static_cast<int>(p.scalar_type()),
                                     static_cast<int>(p.device().type()), p.device().index());
    auto it = open.find(key);
    if (it == open.end() ||
        static_cast<size_t>(sizes[it->second] * p.element_size()) >=
            (it->second == 0 ? options.first_bucket_bytes : options.bucket_bytes)) {
      s.buckets.emplace_back();
      sizes.push_back(0);
      kinds.push_back(p.options().requires_grad(false));
      it = open.insert_or_assign(key, s.buckets.size() - 1).first;
    }
    slot.bucket = it->second;
    slot.offset = sizes[slot.bucket];
    sizes[slot.bucket] += p.numel();
    s.buckets[slot.bucket].slots.push_back(i);
  }
  s.vote_offset = sizes.back();
  ++sizes.back();
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    s.buckets[b].flat = at::empty({sizes[b]}, kinds[b]);
    s.buckets[b].waiting = s.buckets[b].slots.size();
  }

  for (size_t i = 0; i < s.slots.size(); ++i) {
    NodePtr accumulator = torch::autograd::impl::grad_accumulator(s.slots[i].param);
    const uintptr_t key = accumulator->add_post_hook(std::make_unique<State::ReadyHook>(&s, i));
    s.hooks.emplace_back(std::move(accumulator), key);
  }
}

GradientReducer::~GradientReducer() {
  for (auto& [accumulator, key] : state_->hooks) accumulator->del_post_hook(key);
  for (State::Bucket& b : state_->buckets)
    if (b.started) (void)b.reduce.wait();
}

size_t GradientReducer::bucket_count() const { return state_->buckets.size(); }

void GradientReducer::prepare(bool overlap, float vote) {
  MutexLock lock(state_->mutex);
  state_->armed = overlap;
  state_->vote = vote;
}

Status GradientReducer::synchronize() {
  State& s = *state_;
  const Clock::time_point called = Clock::now();
  MutexLock lock(s.mutex);
  at::NoGradGuard no_grad;
  Status status = s.error;
  try {
    for (size_t i = 0; i < s.slots.size(); ++i)
      if (!s.slots[i].arrived) s.gather(i);
    s.start_ready(/*in_backward=*/false);
  } catch (const std::exception& e) {
    if (status.is_ok()) status = io_error(std::string("gradient all-reduce failed: ") + e.what());
  }
  for (State::Bucket& b : s.buckets) {
    if (!b.started) continue;
    Status waited = b.reduce.wait();
    if (status.is_ok()) status = waited;
    b.started = false;
  }
  const Clock::time_point done = Clock::now();
  // A new round.
  for (State::Slot& slot : s.slots) slot.arrived = false;
  for (State::Bucket& b : s.buckets) b.waiting = b.slots.size();
  const Clock::time_point first_start = s.first_start;
  const size_t started = s.next_start;
  const size_t in_backward = s.started_in_backward;
  s.next_start = 0;
  s.started_in_backward = 0;
  s.armed = false;
  s.error = Status::ok();
  if (!status.is_ok()) return status;

  // The sums, divided by the world size on their way back: one pass over the gradients.
  const double scale = 1.0 / s.group->world_size();
  for (State::Slot& slot : s.slots) {
    const at::Tensor sum =
        s.buckets[slot.bucket].flat.narrow(0, slot.offset, slot.param.numel()).view_as(slot.param);
    at::Tensor& grad = slot.param.mutable_grad();
    if (!grad.defined()) grad = at::empty_like(slot.param);
    at::mul_out(grad, sum, scale);
  }
  votes_ = s.buckets.back().flat[s.vote_offset].item<float>();
  ++stats_.reductions;
  stats_.buckets += static_cast<int64_t>(started);
  stats_.buckets_in_backward += static_cast<int64_t>(in_backward);
  stats_.reduce_seconds += seconds_between(std::min(first_start, called), done);
  stats_.exposed_seconds += seconds_between(called, done);
  return Status::ok();
}

}  // namespace stoker
