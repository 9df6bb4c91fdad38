// normalize: uint8 to float32 (unit(x) - mean[c]) / std[c], torchvision's ToTensor (or v2's
// ToDtype) + Normalize bit for bit (normalization.h); field_pipeline.h applies it.
#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

OpSpec normalize() {
  OpSpec op;
  op.name = "normalize";
  op.role = OpRole::kNormalize;
  op.backend = OpBackend::kTensor;
  op.doc =
      "uint8 to float32 (unit(x) - mean[c]) / std[c], one value or one per channel "
      "(torchvision's ToTensor or ToDtype, + Normalize)";
  op.params = {
      ParamSpec::reals("mean", {0.0}, "per-channel mean, in [0, 1] units", 1, ParamSpec::kAnyCount),
      ParamSpec::reals("std", {1.0}, "per-channel standard deviation, non-zero", 1,
                       ParamSpec::kAnyCount),
      ParamSpec::choice("unit_scale", "divide", {"divide", "multiply"},
                        "unit(x): x / 255 (ToTensor, v1's ConvertImageDtype) or x * float32(1 / "
                        "255) (v2's ToDtype(float32, scale=True))"),
  };
  return op;
}

}  // namespace stoker::ops
