// trivial_augment_wide: torchvision's TrivialAugmentWide(num_magnitude_bins, interpolation,
// fill) on a PIL image (transforms v1's, or with version=v2 v2's: Solarize's threshold
// otherwise, pil_policy_ops.h), pixel for pixel, for a uint8 image [C, H, W], C 1 or 3: one
// operation of its 14 (Identity, ShearX, ShearY, TranslateX, TranslateY, Rotate, Brightness, Color,
// Contrast, Sharpness, Posterize, Solarize, AutoContrast, Equalize) drawn uniformly, a
// magnitude bin uniformly, negated with probability 1/2 where signed, applied as torchvision's
// _apply_op (pil_policy_ops.h; interpolation PIL's NEAREST, BILINEAR or BICUBIC). Three draws per
// sample (augment_policies.h: draw_trivial_augment_wide). ops/trivial_augment_wide_test.cc
// compares with torchvision for the same draws.

#include "stoker/pipeline/ops/augment_policies.h"

namespace stoker::ops {

OpSpec trivial_augment_wide() {
  OpSpec op;
  op.name = "trivial_augment_wide";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kPil;
  op.python_class = "TrivialAugmentWide";
  op.doc =
      "One of 14 operations at a random magnitude (torchvision's TrivialAugmentWide on a PIL "
      "image, to the pixel)";
  op.params = {ParamSpec::integer("num_magnitude_bins", 31, "magnitudes each operation takes")
                   .in(2, 1000000)};
  for (ParamSpec& p : policy_common_params()) op.params.push_back(std::move(p));
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    const int64_t bins = params.integer("num_magnitude_bins");
    return make_augment_policy_op(
        "trivial_augment_wide", params, context, PolicySpace::kTrivialAugmentWide, bins,
        [bins](CounterRng& rng) {
          return std::vector<PolicyStepDraw>{draw_trivial_augment_wide(rng, bins)};
        });
  };
  return op;
}

}  // namespace stoker::ops
