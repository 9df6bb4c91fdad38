#pragma once
// FusedAdam, FusedAdamW: torch::optim::Adam and AdamW whose step() runs ATen's fused kernels
// (_fused_adam_, _fused_adamw_): one pass over each parameter's values and no temporaries, in
// place of the ten or so tensor ops per parameter of the C++ optimizers' step(). On the classic
// experiment's MLP those ops and their allocations were about a tenth of a training step.
//
// Everything else is the base optimizer's: its options, its per-parameter state (so checkpoints
// written by either load into the other), save() and load(). The update is the same formula;
// its rounding differs from the unfused ops' by about an ulp per step. A step over gradients
// the fused kernels do not take (sparse, of another dtype than their parameter, or of mixed
// dtypes) is the base optimizer's.

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

namespace stoker {

class FusedAdam final : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  at::Tensor step(LossClosure closure = nullptr) override;
};

class FusedAdamW final : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  at::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace stoker
