#pragma once
// The operations of torchvision's augmentation policies (transforms/autoaugment.py:
// TrivialAugmentWide, RandAugment, AutoAugment) as their _apply_op(image, name, magnitude,
// NEAREST, BILINEAR or BICUBIC, fill) gives them on a PIL image ("L" or "RGB"), pixel for pixel,
// for a uint8 image [C, H, W], C 1 or 3:
//   Identity                 the image
//   ShearX, ShearY           F.affine(shear degrees(atan(m)) along x or y, centre (0, 0))
//   TranslateX, TranslateY   F.affine(translate int(m) along x or y, centre (W / 2, H / 2))
//   Rotate                   F.rotate(m)
//                            (the three: pil_geometry.h, the fill outside)
//   Brightness, Color,       ImageEnhance's blend of black, the grey image, the mean grey or
//   Contrast, Sharpness      the smoothed image with the image, factor float32(1 + m)
//                            (pil_enhance.h; Color leaves an "L" image as it is)
//   Posterize, Solarize      ImageOps.posterize(int(m)), ImageOps.solarize(m)
//   AutoContrast, Equalize,  ImageOps' (channel_table.h)
//   Invert
// The fill: torchvision's `fill` (none: 0; one number: every channel; else one per channel),
// each int()-truncated and clipped to [0, 255] (PIL's fillcolor).
// Magnitudes: torchvision's _augmentation_space tables, float32 torch.linspace(lo, hi, n) as
// ATen's CPU kernel computes it where it fuses multiply-adds (AVX2 and AVX512, x86's usual
// dispatch): step = float32(hi - lo) / (n - 1), entry i = fma(step, i, lo) for i < n / 2, else
// fma(-step, n - 1 - i, hi); Posterize's 8 - round_half_even(float32(i) / float32((n - 1) / k)),
// k 6 (TrivialAugmentWide) or 4.
// transforms v2's classes (v2/_auto_augment.py) reach the same PIL kernels with the same
// magnitudes but Solarize's: its table is linspace(1, 0) and the threshold 255.0 times the
// float32 entry, a double (v1: the float32 entry of linspace(255, 0)), so a pixel at an integer
// threshold v1 inverts (238 at bin 2 of 31) v2 may leave as it is (238.0000009...).
// Pure; the including file is built with -ffp-contract=off.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/pipeline/ops/channel_table.h"
#include "stoker/pipeline/ops/pil_enhance.h"
#include "stoker/pipeline/ops/pil_geometry.h"

namespace stoker::ops {

// In the order of TrivialAugmentWide's and RandAugment's op spaces (Invert: AutoAugment's).
enum class PolicyOp {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert,
};

// The op spaces: whose magnitude tables.
enum class PolicySpace { kTrivialAugmentWide, kRandAugment, kAutoAugment };

// torchvision's transforms version whose policy class: transforms v1's or v2's.
enum class PolicyVersion { kV1, kV2 };

inline const char* policy_op_name(PolicyOp op) {
  static const char* const kNames[] = {"Identity",     "ShearX",    "ShearY",     "TranslateX",
                                       "TranslateY",   "Rotate",    "Brightness", "Color",
                                       "Contrast",     "Sharpness", "Posterize",  "Solarize",
                                       "AutoContrast", "Equalize",  "Invert"};
  return kNames[static_cast<int>(op)];
}

// Whether torchvision negates the magnitude half the time.
inline bool policy_op_signed(PolicyOp op) {
  return op >= PolicyOp::kShearX && op <= PolicyOp::kSharpness;
}

// float32 torch.linspace(lo, hi, count) (see above).
inline std::vector<float> torch_linspace(double lo, double hi, int64_t count) {
  const float start = static_cast<float>(lo);
  const float end = static_cast<float>(hi);
  std::vector<float> values(static_cast<size_t>(count));
  if (count == 1) {
    values[0] = start;
    return values;
  }
  const float step = (end - start) / static_cast<float>(count - 1);
  const int64_t halfway = count / 2;
  for (int64_t i = 0; i < count; ++i) {
    values[i] = i < halfway ? std::fma(step, static_cast<float>(i), start)
                            : std::fma(-step, static_cast<float>(count - 1 - i), end);
  }
  return values;
}

// The magnitudes `space` of transforms `version` gives `op` with `bins` bins for an image
// [height, width]; empty where torchvision's is a scalar (magnitude 0).
inline std::vector<double> policy_magnitudes(PolicySpace space, PolicyOp op, int64_t bins,
                                             int64_t height, int64_t width, PolicyVersion version) {
  const bool wide = space == PolicySpace::kTrivialAugmentWide;
  auto linspace = [&](double lo, double hi) {
    const std::vector<float> values = torch_linspace(lo, hi, bins);
    return std::vector<double>(values.begin(), values.end());
  };
  switch (op) {
    case PolicyOp::kShearX:
    case PolicyOp::kShearY:
      return linspace(0.0, wide ? 0.99 : 0.3);
    case PolicyOp::kTranslateX:
      return linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * static_cast<double>(width));
    case PolicyOp::kTranslateY:
      return linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * static_cast<double>(height));
    case PolicyOp::kRotate:
      return linspace(0.0, wide ? 135.0 : 30.0);
    case PolicyOp::kBrightness:
    case PolicyOp::kColor:
    case PolicyOp::kContrast:
    case PolicyOp::kSharpness:
      return linspace(0.0, wide ? 0.99 : 0.9);
    case PolicyOp::kPosterize: {
      const float divisor = static_cast<float>(static_cast<double>(bins - 1) / (wide ? 6.0 : 4.0));
      std::vector<double> bits(static_cast<size_t>(bins));
      for (int64_t i = 0; i < bins; ++i) {
        bits[i] = 8.0 - static_cast<double>(std::nearbyint(static_cast<float>(i) / divisor));
      }
      return bits;
    }
    case PolicyOp::kSolarize: {
      if (version == PolicyVersion::kV1) return linspace(255.0, 0.0);
      std::vector<double> thresholds = linspace(1.0, 0.0);
      for (double& threshold : thresholds) threshold *= 255.0;
      return thresholds;
    }
    default:
      return {};
  }
}

// torchvision's fill for an image of `channels`: one colour per channel.
inline std::vector<uint8_t> policy_fill(const std::vector<double>& fill, int64_t channels) {
  std::vector<uint8_t> colour(static_cast<size_t>(channels), 0);
  for (int64_t c = 0; c < channels && !fill.empty(); ++c) {
    const double value = std::trunc(fill.size() == 1 ? fill[0] : fill[c]);
    colour[c] = static_cast<uint8_t>(value < 0.0 ? 0.0 : value > 255.0 ? 255.0 : value);
  }
  return colour;
}

// ShearX/Y (about the image's corner) or TranslateX/Y (about its centre, by the truncated
// magnitude) as torchvision's _apply_op: the inverse affine matrix, its centre in the backend's
// coordinates, measured from (origin_x, origin_y): PIL's pixels from (0, 0), the tensor path's
// from the image's centre.
inline AffineMatrix policy_affine(PolicyOp op, double magnitude, int64_t width, int64_t height,
                                  double origin_x, double origin_y) {
  if (op == PolicyOp::kShearX || op == PolicyOp::kShearY) {
    const double shear = pil_geometry_detail::degrees(std::atan(magnitude));
    const bool x = op == PolicyOp::kShearX;
    return torchvision_inverse_affine(-origin_x, -origin_y, 0.0, 0, 0, 1.0, x ? shear : 0.0,
                                      x ? 0.0 : shear);
  }
  const double shift = std::trunc(magnitude);
  const bool x = op == PolicyOp::kTranslateX;
  return torchvision_inverse_affine(static_cast<double>(width) * 0.5 - origin_x,
                                    static_cast<double>(height) * 0.5 - origin_y, 0.0,
                                    x ? shift : 0, x ? 0 : shift, 1.0, 0.0, 0.0);
}

// Posterize, Solarize (`magnitude` its threshold), Equalize and Invert, whose pixels both of
// torchvision's backends share, on `pixels` [channels, plane]: true if `op` is one of them.
inline bool apply_policy_table_op(PolicyOp op, double magnitude, uint8_t* pixels, int64_t channels,
                                  size_t plane) {
  const auto table = [&](const ChannelTable& fixed) {
    apply_channel_tables(pixels, channels, plane, [&](const uint8_t*, size_t) { return fixed; });
  };
  switch (op) {
    case PolicyOp::kPosterize:
      table(posterize_table(static_cast<int64_t>(magnitude)));
      return true;
    case PolicyOp::kSolarize:
      table(solarize_table(magnitude));
      return true;
    case PolicyOp::kEqualize:
      apply_channel_tables(pixels, channels, plane, equalize_table);
      return true;
    case PolicyOp::kInvert:
      table(invert_table());
      return true;
    default:
      return false;
  }
}

// `op` with `magnitude` on the image `pixels` [channels, height, width], in place; `fill` one
// colour per channel (policy_fill); geometric operations sample with `filter` (torchvision's
// NEAREST, BILINEAR or BICUBIC).
inline void apply_policy_op(PolicyOp op, double magnitude, const std::vector<uint8_t>& fill,
                            uint8_t* pixels, int64_t channels, int64_t height, int64_t width,
                            PilFilter filter = PilFilter::kNearest) {
  const size_t plane = static_cast<size_t>(height * width);
  auto transform = [&](const AffineMatrix& matrix) {
    pil_transform_image(matrix, filter, fill, pixels, channels, height, width);
  };
  auto enhance = [&](PilEnhance kind) {
    pil_enhance_image(kind, static_cast<float>(1.0 + magnitude), pixels, channels, height, width);
  };
  if (apply_policy_table_op(op, magnitude, pixels, channels, plane)) return;
  switch (op) {
    case PolicyOp::kIdentity:
      return;
    case PolicyOp::kShearX:
    case PolicyOp::kShearY:
    case PolicyOp::kTranslateX:
    case PolicyOp::kTranslateY:
      return transform(policy_affine(op, magnitude, width, height, 0, 0));
    case PolicyOp::kRotate:
      pil_rotate_image(magnitude, filter, fill, pixels, channels, height, width);
      return;
    case PolicyOp::kBrightness:
      return enhance(PilEnhance::kBrightness);
    case PolicyOp::kColor:
      return enhance(PilEnhance::kColor);
    case PolicyOp::kContrast:
      return enhance(PilEnhance::kContrast);
    case PolicyOp::kSharpness:
      return enhance(PilEnhance::kSharpness);
    case PolicyOp::kAutoContrast:
      apply_channel_tables(pixels, channels, plane, autocontrast_table);
      return;
    case PolicyOp::kPosterize:
    case PolicyOp::kSolarize:
    case PolicyOp::kEqualize:
    case PolicyOp::kInvert:
      return;  // apply_policy_table_op's
  }
}

}  // namespace stoker::ops
