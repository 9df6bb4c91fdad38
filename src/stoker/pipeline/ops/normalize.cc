// normalize: uint8 to float32 (x / 255 - mean[c]) / std[c], torchvision's ToTensor + Normalize
// (normalization.h); field_pipeline.h applies it.
#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

OpSpec normalize() {
  OpSpec op;
  op.name = "normalize";
  op.role = OpRole::kNormalize;
  op.backend = OpBackend::kTensor;
  op.doc =
      "uint8 to float32 (x / 255 - mean[c]) / std[c], one value or one per channel "
      "(torchvision's ToTensor + Normalize)";
  op.params = {
      ParamSpec::reals("mean", {0.0}, "per-channel mean, in [0, 1] units", 1, ParamSpec::kAnyCount),
      ParamSpec::reals("std", {1.0}, "per-channel standard deviation, non-zero", 1,
                       ParamSpec::kAnyCount),
  };
  return op;
}

}  // namespace stoker::ops
