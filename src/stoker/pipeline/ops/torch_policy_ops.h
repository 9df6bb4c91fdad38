#pragma once
// torchvision's augmentation-policy operations on a uint8 tensor [C, H, W], C 1 or 3:
// transforms v1's _apply_op on a tensor, or with TorchKernels::kV2 v2's
// _apply_image_or_video_transform. ShearX/Y about the corner (center [0, 0]: the tensor
// path's centre offset (-W / 2, -H / 2)), TranslateX/Y by the truncated magnitude and Rotate
// about the centre (v2: by the angle modulo 360, 0 leaving the image as it is) through
// grid_sample (torch_grid_transform: NEAREST or BILINEAR, `fill` empty for None: zeros
// padding); Brightness, Color, Contrast and Sharpness torch's blends (torch_adjust with the
// factor 1 + magnitude), AutoContrast torch's (torch_autocontrast); Posterize, Solarize,
// Equalize and Invert the tables the PIL path uses (both backends' pixels are equal there; v2
// compares the tensor with its Solarize threshold in float32).
// `magnitude` signed already. Used by the policies' backend=tensor (augment_policies.h) and by
// augmix. Pure.

#include <cmath>
#include <cstdint>
#include <vector>

#include "stoker/pipeline/ops/channel_table.h"
#include "stoker/pipeline/ops/pil_policy_ops.h"
#include "stoker/pipeline/ops/torchvision_tensor_ops.h"

namespace stoker::ops {

inline void apply_torch_policy_op(PolicyOp op, double magnitude, TorchKernels kernels,
                                  bool bilinear, const std::vector<float>& fill, uint8_t* pixels,
                                  int64_t channels, int64_t height, int64_t width) {
  const size_t plane = static_cast<size_t>(height * width);
  const auto grid = [&](const AffineMatrix& matrix) {
    torch_grid_transform(kernels, matrix, bilinear, fill, pixels, channels, height, width);
  };
  // v2 compares the uint8 tensor with the Solarize threshold in float32.
  const bool float_threshold = op == PolicyOp::kSolarize && kernels == TorchKernels::kV2;
  if (apply_policy_table_op(op, float_threshold ? static_cast<float>(magnitude) : magnitude, pixels,
                            channels, plane))
    return;
  const auto adjust = [&](TorchAdjust kind) {
    torch_adjust(kernels, kind, 1.0 + magnitude, pixels, channels, height, width);
  };
  switch (op) {
    case PolicyOp::kIdentity:
      return;
    case PolicyOp::kShearX:
    case PolicyOp::kShearY:
    case PolicyOp::kTranslateX:
    case PolicyOp::kTranslateY:
      return grid(policy_affine(op, magnitude, width, height, width * 0.5, height * 0.5));
    case PolicyOp::kRotate: {
      double angle = magnitude;
      if (kernels == TorchKernels::kV2) {  // Python's angle % 360
        angle = std::fmod(magnitude, 360.0);
        if (angle < 0) angle += 360.0;
        if (angle == 0) return;
      }
      return grid(torchvision_inverse_affine(0, 0, -angle, 0, 0, 1.0, 0.0, 0.0));
    }
    case PolicyOp::kBrightness:
      return adjust(TorchAdjust::kBrightness);
    case PolicyOp::kColor:
      return adjust(TorchAdjust::kSaturation);
    case PolicyOp::kContrast:
      return adjust(TorchAdjust::kContrast);
    case PolicyOp::kSharpness:
      return adjust(TorchAdjust::kSharpness);
    case PolicyOp::kAutoContrast:
      return torch_autocontrast(kernels, pixels, channels, plane);
    case PolicyOp::kPosterize:
    case PolicyOp::kSolarize:
    case PolicyOp::kEqualize:
    case PolicyOp::kInvert:
      return;  // apply_policy_table_op's
  }
}

}  // namespace stoker::ops
