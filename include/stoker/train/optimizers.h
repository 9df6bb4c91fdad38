#pragma once
// Optimizers: builds a torch::optim optimizer (SGD, Adam, AdamW) from a plain spec, rejecting
// settings that do not make sense together before training starts.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/util/enum_names.h"

namespace stoker {

// The optimizers make_optimizer builds, named by OptimizerSpec::name.
enum class OptimizerKind { kSgd, kAdam, kAdamW };

inline constexpr auto kOptimizerNames =
    enum_names<OptimizerKind>({{OptimizerKind::kSgd, "sgd"},
                               {OptimizerKind::kAdam, "adam"},
                               {OptimizerKind::kAdamW, "adamw"}});

// Optimizer settings. Fields that do not apply to the chosen optimizer must keep their defaults.
struct OptimizerSpec {
  std::string name = "adam";  // one of kOptimizerNames
  double lr = 1e-3;           // > 0
  // SGD only.
  double momentum = 0.0;   // in [0, 1)
  double dampening = 0.0;  // in [0, 1); must be 0 with nesterov
  bool nesterov = false;   // needs momentum > 0
  // Adam and AdamW only.
  double beta1 = 0.9;    // in [0, 1)
  double beta2 = 0.999;  // in [0, 1)
  double eps = 1e-8;     // > 0
  // All; unset means PyTorch's default: 0 for sgd and adam, 0.01 for adamw.
  std::optional<double> weight_decay;
};

// The weight decay `spec` trains with: its own, else its optimizer's default.
double weight_decay_of(const OptimizerSpec& spec);

// Builds the optimizer over `params` (handles to tensors that must outlive it). Throws Error
// for an unknown name (listing the known ones) or an invalid or contradictory setting.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& spec,
                                                        std::vector<at::Tensor> params);

}  // namespace stoker
