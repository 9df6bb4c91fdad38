#include "stoker/train/optimizers.h"

#include <torch/optim/sgd.h>

#include <cmath>
#include <sstream>
#include <tuple>

#include "stoker/train/fused_adam.h"
#include "stoker/util/status.h"

namespace stoker {
namespace {

// Fails with "optimizer <name>: <field> = <value> <requirement>" unless `ok`.
Status require(bool ok, const OptimizerSpec& spec, const std::string& field, double value,
               const std::string& requirement) {
  if (ok) return Status::ok();
  std::ostringstream out;
  out << "optimizer " << spec.name << ": " << field << " = " << value << " " << requirement;
  return invalid_argument(out.str());
}

Status validate(const OptimizerSpec& s) {
  const std::optional<OptimizerKind> kind = kOptimizerNames.find(s.name);
  if (!kind) {
    return invalid_argument("unknown optimizer '" + s.name + "': known optimizers are " +
                            kOptimizerNames.joined());
  }
  const bool sgd = *kind == OptimizerKind::kSgd;
  const double wd = weight_decay_of(s);
  STOKER_RETURN_IF_ERROR(require(std::isfinite(s.lr) && s.lr > 0, s, "lr", s.lr, "must be > 0"));
  STOKER_RETURN_IF_ERROR(
      require(std::isfinite(wd) && wd >= 0, s, "weight_decay", wd, "must be >= 0"));
  if (sgd) {
    STOKER_RETURN_IF_ERROR(
        require(s.momentum >= 0 && s.momentum < 1, s, "momentum", s.momentum, "must be in [0, 1)"));
    STOKER_RETURN_IF_ERROR(require(s.dampening >= 0 && s.dampening < 1, s, "dampening", s.dampening,
                                   "must be in [0, 1)"));
    STOKER_RETURN_IF_ERROR(require(!s.nesterov || s.momentum > 0, s, "momentum", s.momentum,
                                   "must be > 0 with nesterov"));
    STOKER_RETURN_IF_ERROR(require(!s.nesterov || s.dampening == 0, s, "dampening", s.dampening,
                                   "must be 0 with nesterov"));
    const OptimizerSpec defaults;
    if (s.beta1 != defaults.beta1 || s.beta2 != defaults.beta2 || s.eps != defaults.eps) {
      return invalid_argument("optimizer sgd: betas and eps apply to adam and adamw only");
    }
  } else {
    STOKER_RETURN_IF_ERROR(
        require(s.beta1 >= 0 && s.beta1 < 1, s, "beta1", s.beta1, "must be in [0, 1)"));
    STOKER_RETURN_IF_ERROR(
        require(s.beta2 >= 0 && s.beta2 < 1, s, "beta2", s.beta2, "must be in [0, 1)"));
    STOKER_RETURN_IF_ERROR(
        require(std::isfinite(s.eps) && s.eps > 0, s, "eps", s.eps, "must be > 0"));
    if (s.momentum != 0 || s.dampening != 0 || s.nesterov) {
      return invalid_argument("optimizer " + s.name +
                              ": momentum, dampening and nesterov apply to sgd only");
    }
  }
  return Status::ok();
}

}  // namespace

double weight_decay_of(const OptimizerSpec& spec) {
  return spec.weight_decay.value_or(spec.name == "adamw" ? 0.01 : 0.0);
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& spec,
                                                        std::vector<at::Tensor> params) {
  throw_if_error(validate(spec));
  const OptimizerKind kind = *kOptimizerNames.find(spec.name);
  if (kind == OptimizerKind::kSgd) {
    return std::make_unique<torch::optim::SGD>(std::move(params),
                                               torch::optim::SGDOptions(spec.lr)
                                                   .momentum(spec.momentum)
                                                   .dampening(spec.dampening)
                                                   .nesterov(spec.nesterov)
                                                   .weight_decay(weight_decay_of(spec)));
  }
  const auto betas = std::make_tuple(spec.beta1, spec.beta2);
  if (kind == OptimizerKind::kAdam) {
    return std::make_unique<FusedAdam>(
        std::move(params),
        torch::optim::AdamOptions(spec.lr).betas(betas).eps(spec.eps).weight_decay(
            weight_decay_of(spec)));
  }
  return std::make_unique<FusedAdamW>(
      std::move(params),
      torch::optim::AdamWOptions(spec.lr).betas(betas).eps(spec.eps).weight_decay(
          weight_decay_of(spec)));
}

}  // namespace stoker
