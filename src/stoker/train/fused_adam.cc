#include "stoker/train/fused_adam.h"

#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <memory>
#include <optional>
#include <vector>

namespace stoker {
namespace {

// One group's tensors for a fused call, in the parameters' order.
struct FusedLists {
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
};

// The state of `p` as the base optimizer makes it (zeros; step 0), counted one step on, and
// added to `lists`. State is AdamParamState or AdamWParamState.
template <typename State>
void add_param(std::unique_ptr<torch::optim::OptimizerParamState>& slot, const at::Tensor& p,
               bool amsgrad, FusedLists& lists) {
  if (!slot) {
    auto state = std::make_unique<State>();
    state->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
    state->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    if (amsgrad) state->max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    slot = std::move(state);
  }
  auto& state = static_cast<State&>(*slot);
  state.step(state.step() + 1);
  lists.params.push_back(p);
  lists.grads.push_back(p.grad());
  lists.exp_avgs.push_back(state.exp_avg());
  lists.exp_avg_sqs.push_back(state.exp_avg_sq());
  if (amsgrad) lists.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
  // The kernels read the step count (already counted) from a float tensor, as Python's do.
  lists.steps.push_back(
      at::scalar_tensor(static_cast<double>(state.step()), p.options().dtype(at::kFloat)));
}

// Every parameter with a gradient is one the fused kernels take: a dense floating-point
// gradient of its parameter's dtype and device, and one dtype throughout.
bool all_fusable(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  std::optional<at::ScalarType> dtype;
  for (const torch::optim::OptimizerParamGroup& group : groups) {
    for (const at::Tensor& p : group.params()) {
      const at::Tensor& g = p.grad();
      if (!g.defined()) continue;
      if (g.is_sparse() || g.scalar_type() != p.scalar_type() || g.device() != p.device() ||
          !at::isFloatingType(p.scalar_type()) ||
          dtype.value_or(p.scalar_type()) != p.scalar_type())
        return false;
      dtype = p.scalar_type();
    }
  }
  return true;
}

// `optimizer`'s step with each group's parameters through `fused`.
template <typename Options, typename State, typename Base, typename Fused>
at::Tensor fused_step(
    Base& optimizer,
    ska::flat_hash_map<void*, std::unique_ptr<torch::optim::OptimizerParamState>>& state,
    typename Base::LossClosure closure, Fused fused) {
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  at::NoGradGuard no_grad;
  for (torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    const auto& options = static_cast<const Options&>(group.options());
    FusedLists lists;
    for (const at::Tensor& p : group.params()) {
      if (p.grad().defined())
        add_param<State>(state[p.unsafeGetTensorImpl()], p, options.amsgrad(), lists);
    }
    if (!lists.params.empty()) fused(lists, options);
  }
  return loss;
}

}  // namespace

at::Tensor FusedAdam::step(LossClosure closure) {
  if (!all_fusable(param_groups())) return torch::optim::Adam::step(std::move(closure));
  return fused_step<torch::optim::AdamOptions, torch::optim::AdamParamState>(
      *this, state_, std::move(closure), [](FusedLists& l, const torch::optim::AdamOptions& o) {
        at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                         o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                         o.eps(), o.amsgrad(), /*maximize=*/false);
      });
}

at::Tensor FusedAdamW::step(LossClosure closure) {
  if (!all_fusable(param_groups())) return torch::optim::AdamW::step(std::move(closure));
  return fused_step<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(
      *this, state_, std::move(closure), [](FusedLists& l, const torch::optim::AdamWOptions& o) {
        at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                          o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                          o.eps(), o.amsgrad(), /*maximize=*/false);
      });
}

}  // namespace stoker
