#include "stoker/distributed/process_group.h"

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>
#include <vector>
#ifdef STOKER_WITH_NCCL  // a CUDA LibTorch with NCCL (cmake/TorchSummary.cmake)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace stoker {
namespace {

// The first line of what `e` says, without LibTorch's backtrace or gloo's "[file.cc:123] ".
std::string cause_of(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == '.' || text.back() == ' ')) text.pop_back();
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find("] ");
    if (close != std::string::npos) text.erase(0, close + 2);
  }
  return text;
}

bool mentions(const std::string& text, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (text.find(w) != std::string::npos) return true;
  return false;
}

// What a collective's failure means for the user, from the cause's words.
std::string meaning(const std::string& cause, std::chrono::milliseconds timeout) {
  const std::string limit = fmt::format("{:g} s", timeout.count() / 1000.0);
  if (mentions(cause, {"Timed out", "timed out", "Timeout", "timeout"}))
    return "a peer rank did not answer within the " + limit + " timeout: it hangs or is gone";
  if (mentions(cause, {"closed", "reset", "Broken pipe", "refused", "EOF"}))
    return "a peer rank exited";
  return "a peer rank failed or exited";
}

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
    case ReduceOp::kSum:
      break;
  }
  return c10d::ReduceOp::SUM;
}

using Clock = std::chrono::steady_clock;

// What ProcessGroupGloo and ProcessGroupNCCL derive from: c10d::Backend since LibTorch 2.0.
#if TORCH_VERSION_MAJOR >= 2
using Collectives = c10d::Backend;
#else
using Collectives = c10d::ProcessGroup;
#endif

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Collectives> gloo;  // every CPU tensor, and CUDA tensors without NCCL
  c10::intrusive_ptr<Collectives> nccl;  // CUDA tensors, with DistBackend::kNccl
  int rank = 0;
  int world_size = 1;
  std::chrono::milliseconds timeout{0};

  // The backend that carries collectives on `tensor`.
  Collectives& for_tensor(const at::Tensor& tensor) const {
    return nccl && tensor.is_cuda() ? *nccl : *gloo;
  }

  // "rank R of W: WHAT failed: CAUSE (MEANING)", kIoError.
  Status failure(const std::string& what, const std::exception& e) const {
    const std::string cause = cause_of(e);
    return io_error(fmt::format("rank {} of {}: {} failed: {} ({})", rank, world_size, what, cause,
                                meaning(cause, timeout)));
  }
};

struct PendingReduce::State {
  c10::intrusive_ptr<c10d::Work> work;
  std::shared_ptr<const ProcessGroup::Impl> group;  // null once waited
  Status start_error;
};

PendingReduce::PendingReduce() = default;
PendingReduce::PendingReduce(std::unique_ptr<State> state) : state_(std::move(state)) {}
PendingReduce::PendingReduce(PendingReduce&&) noexcept = default;
PendingReduce& PendingReduce::operator=(PendingReduce&& other) noexcept {
  if (this != &other) {
    if (state_) (void)wait();
    state_ = std::move(other.state_);
  }
  return *this;
}
PendingReduce::~PendingReduce() {
  if (state_) (void)wait();
}

Status PendingReduce::wait() {
  if (!state_) return Status(StatusCode::kInternal, "PendingReduce::wait: nothing started");
  std::unique_ptr<State> state = std::move(state_);
  if (!state->start_error.is_ok()) return state->start_error;
  try {
    state->work->wait();
  } catch (const std::exception& e) {
    return state->group->failure("all-reduce", e);
  }
  return Status::ok();
}

bool PendingReduce::done() const {
  return !state_ || !state_->start_error.is_ok() || state_->work->isCompleted();
}

ProcessGroup::ProcessGroup(std::shared_ptr<Impl> impl)
    : impl_(std::move(impl)),
      rank_(impl_->rank),
      world_size_(impl_->world_size),
      timeout_(impl_->timeout) {}

ProcessGroup::~ProcessGroup() = default;

DistBackend ProcessGroup::backend() const {
  return impl_->nccl ? DistBackend::kNccl : DistBackend::kGloo;
}

bool nccl_available() {
#ifdef STOKER_WITH_NCCL
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<ProcessGroup>> ProcessGroup::connect(const LaunchEnv& env,
                                                            std::chrono::milliseconds timeout,
                                                            DistBackend backend) {
  if (!env.distributed())
    return invalid_argument("ProcessGroup::connect: a world of one process has no peers");
  if (timeout.count() <= 0) return invalid_argument("the distributed timeout must be > 0");
  const Clock::time_point deadline = Clock::now() + timeout;
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port);
  options.isServer = !env.agent_store && env.rank == 0;
  options.numWorkers = env.world_size;
  options.waitWorkers = false;  // the ranks wait for each other below, within the deadline
  options.timeout = timeout;
  const std::string address = fmt::format("{}:{}", env.master_addr, env.master_port);
  const std::string seconds = fmt::format("{:g} s", timeout.count() / 1000.0);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const std::exception& e) {
    const std::string cause = cause_of(e);
    const std::string hint = options.isServer && mentions(cause, {"in use"})
                                 ? ": another run uses this MASTER_PORT, or the launcher hosts "
                                   "the store without setting TORCHELASTIC_USE_AGENT_STORE=True"
                                 : "";
    return io_error(fmt::format("rank {} of {}: cannot {} the c10d store at {}: {}{}", env.rank,
                                env.world_size, options.isServer ? "serve" : "reach", address,
                                cause, hint));
  }
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
      fmt::format("stoker/attempt_{}", env.restart_count), store);
  // Every rank announces itself and waits for the others: a missing rank is named.
  std::vector<std::string> keys;
  for (int r = 0; r < env.world_size; ++r) keys.push_back(fmt::format("joined/{}", r));
  try {
    prefixed->set(keys[env.rank], std::vector<uint8_t>{'1'});
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    prefixed->wait(keys, std::max(left, std::chrono::milliseconds(1)));
  } catch (const std::exception& e) {
    std::vector<int> missing;
    try {
      for (int r = 0; r < env.world_size; ++r)
        if (!prefixed->check({keys[r]})) missing.push_back(r);
    } catch (const std::exception&) {
      return io_error(fmt::format("rank {} of {}: lost the c10d store at {}: {}", env.rank,
                                  env.world_size, address, cause_of(e)));
    }
    return io_error(fmt::format("rank {} of {}: rank{} {} did not join within {} (store {})",
                                env.rank, env.world_size, missing.size() == 1 ? "" : "s",
                                fmt::join(missing, ", "), seconds, address));
  }
  return over_store(prefixed, env.rank, env.world_size, timeout, backend);
}

Result<std::unique_ptr<ProcessGroup>> ProcessGroup::over_store(
    c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
    std::chrono::milliseconds timeout, DistBackend backend) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    return invalid_argument(
        fmt::format("rank {} is not a rank of a world of {}", rank, world_size));
  if (timeout.count() <= 0) return invalid_argument("the distributed timeout must be > 0");
  if (backend == DistBackend::kNccl && !nccl_available())
    return invalid_argument(
        "the nccl backend needs a stoker built against a LibTorch with CUDA and NCCL (this one "
        "has neither); use gloo");
  if (backend == DistBackend::kNccl && torch::cuda::device_count() == 0)
    return invalid_argument(
        "the nccl backend needs a CUDA GPU, and none is visible here; use gloo");
  auto impl = std::make_shared<Impl>();
  impl->store = std::move(store);
  impl->rank = rank;
  impl->world_size = world_size;
  impl->timeout = timeout;
  try {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    options->devices.push_back(
        interface && *interface ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
                                : c10d::ProcessGroupGloo::createDefaultDevice());
    impl->gloo =
        c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, rank, world_size, options);
#ifdef STOKER_WITH_NCCL
    if (backend == DistBackend::kNccl) {
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = timeout;
      // Its own keys: NCCL's unique id is exchanged through the store beside gloo's.
      auto nccl_store = c10::make_intrusive<c10d::PrefixStore>("nccl", impl->store);
      impl->nccl =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(nccl_store, rank, world_size, nccl_options);
    }
#endif
  } catch (const std::exception& e) {
    return impl->failure("connecting to the other ranks", e);
  }
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
}

Status ProcessGroup::all_reduce(const std::vector<at::Tensor>& tensors, ReduceOp op) {
  c10d::AllreduceOptions options;
  options.reduceOp = to_c10d(op);
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  try {
    for (const at::Tensor& t : tensors) {
      std::vector<at::Tensor> one = {t};
      works.push_back(impl_->for_tensor(t).allreduce(one, options));
    }
    for (auto& work : works) work->wait();
  } catch (const std::exception& e) {
    return impl_->failure("all-reduce", e);
  }
  return Status::ok();
}

PendingReduce ProcessGroup::all_reduce_async(const at::Tensor& tensor) {
  auto state = std::make_unique<PendingReduce::State>();
  state->group = impl_;
  try {
    std::vector<at::Tensor> one = {tensor};
    state->work = impl_->for_tensor(tensor).allreduce(one);
  } catch (const std::exception& e) {
    state->start_error = impl_->failure("all-reduce", e);
  }
  return PendingReduce(std::move(state));
}

Status ProcessGroup::broadcast(const std::vector<at::Tensor>& tensors, int root) {
  if (root < 0 || root >= world_size_)
    return invalid_argument(fmt::format("broadcast from rank {} of {}", root, world_size_));
  c10d::BroadcastOptions options;
  options.rootRank = root;
  try {
    for (const at::Tensor& t : tensors) {
      std::vector<at::Tensor> one = {t.is_contiguous() ? t : t.contiguous()};
      impl_->for_tensor(t).broadcast(one, options)->wait();
      if (!one[0].is_same(t)) t.copy_(one[0]);
    }
  } catch (const std::exception& e) {
    return impl_->failure(fmt::format("broadcast from rank {}", root), e);
  }
  return Status::ok();
}

Status ProcessGroup::barrier() {
  try {
    impl_->gloo->barrier()->wait();
  } catch (const std::exception& e) {
    return impl_->failure("barrier", e);
  }
  return Status::ok();
}

}  // namespace stoker
