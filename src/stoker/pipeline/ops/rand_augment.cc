// rand_augment: torchvision's RandAugment(num_ops, magnitude, num_magnitude_bins,
// interpolation, fill) on a PIL image (transforms v1's, or with version=v2 v2's: Solarize's
// threshold otherwise, pil_policy_ops.h), pixel for pixel, for a uint8 image [C, H, W], C 1 or 3:
// num_ops times, one operation of its 14 (Identity ... Equalize, TrivialAugmentWide's list
// with RandAugment's magnitudes) drawn uniformly, at bin `magnitude`, negated with probability
// 1/2 where signed, applied as torchvision's _apply_op (pil_policy_ops.h; interpolation PIL's
// NEAREST, BILINEAR or BICUBIC). Two draws per step (augment_policies.h: draw_rand_augment).
// ops/rand_augment_test.cc compares with torchvision for the same draws.

#include "stoker/pipeline/ops/augment_policies.h"

namespace stoker::ops {

OpSpec rand_augment() {
  OpSpec op;
  op.name = "rand_augment";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kPil;
  op.python_class = "RandAugment";
  op.doc =
      "num_ops random operations of 14 at one magnitude (torchvision's RandAugment on a PIL "
      "image, to the pixel)";
  op.params = {
      ParamSpec::integer("num_ops", 2, "operations applied in turn").in(0, 1000),
      ParamSpec::integer("magnitude", 9, "the magnitude bin, below num_magnitude_bins").at_least(0),
      ParamSpec::integer("num_magnitude_bins", 31, "magnitudes each operation takes")
          .in(2, 1000000)};
  for (ParamSpec& p : policy_common_params()) op.params.push_back(std::move(p));
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    const int64_t num_ops = params.integer("num_ops");
    const int64_t magnitude = params.integer("magnitude");
    const int64_t bins = params.integer("num_magnitude_bins");
    if (magnitude >= bins) {
      return invalid_argument("field '" + context.field + "': rand_augment: magnitude " +
                              std::to_string(magnitude) + " must be below num_magnitude_bins " +
                              std::to_string(bins));
    }
    return make_augment_policy_op("rand_augment", params, context, PolicySpace::kRandAugment, bins,
                                  [num_ops, magnitude](CounterRng& rng) {
                                    return draw_rand_augment(rng, num_ops, magnitude);
                                  });
  };
  return op;
}

}  // namespace stoker::ops
