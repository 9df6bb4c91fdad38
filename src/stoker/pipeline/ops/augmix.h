#pragma once
// torchvision's AugMix (ops/augmix.cc): its settings and the draws a sample makes, for the
// operation and its test.
//
// A sample's draws, from the operation's own stream: (m0, m1) = dirichlet_draw(alpha, 2) and
// the chains' w = dirichlet_draw(alpha, mixture_width) (beta_draw.h), each in float32; then
// per chain its depth (chain_depth if above 0, else 1 + uniform_below(3)) and per operation
// uniform_below(number of operations), its bin uniform_below(severity) and its sign
// uniform_below(2): v1 draws all three whatever the operation, v2 the bin only where the
// operation has magnitudes (not AutoContrast, Equalize) and the sign only where it is signed.

#include <cstdint>
#include <vector>

#include "stoker/pipeline/ops/augment_policies.h"
#include "stoker/pipeline/ops/torchvision_tensor_ops.h"
#include "stoker/util/rng.h"

namespace stoker::ops {

struct AugMixSettings {
  int64_t severity = 3;
  int64_t width = 3;
  int64_t depth = -1;
  double alpha = 1;
  bool all_ops = true;
  bool bilinear = true;
  std::vector<float> fill;                   // empty: none (zeros padding)
  TorchKernels kernels = TorchKernels::kV1;  // torchvision's transforms v1 or v2
};

struct AugMixDraw {
  float original = 0;          // m0
  float augmented = 0;         // m1
  std::vector<float> weights;  // w_i
  std::vector<std::vector<PolicyStepDraw>> chains;
};

// _augmentation_space's operations, in its order (all_ops: all 13, else the first 9).
const std::vector<PolicyOp>& augmix_ops();

AugMixDraw draw_augmix(CounterRng& rng, const AugMixSettings& settings);

}  // namespace stoker::ops
