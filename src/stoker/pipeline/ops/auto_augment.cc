// auto_augment: torchvision's AutoAugment(policy, interpolation, fill) on a PIL image
// (transforms v1's, or with version=v2 v2's: Solarize's threshold otherwise, pil_policy_ops.h),
// pixel for pixel, for a uint8 image [C, H, W], C 1 or 3: one of the policy's 25 sub-policies (its
// "imagenet", "cifar10" or "svhn" table) drawn uniformly; each of its two operations applied
// with its probability, at its magnitude bin of 10 (RandAugment's magnitudes), negated with
// probability 1/2 where signed, as torchvision's _apply_op (pil_policy_ops.h; interpolation
// PIL's NEAREST, BILINEAR or BICUBIC). Five draws per sample (augment_policies.h:
// draw_auto_augment). ops/auto_augment_test.cc compares with torchvision for the same draws.

#include "stoker/pipeline/ops/augment_policies.h"

namespace stoker::ops {

OpSpec auto_augment() {
  OpSpec op;
  op.name = "auto_augment";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kPil;
  op.python_class = "AutoAugment";
  op.doc =
      "A random sub-policy of a learned policy (torchvision's AutoAugment on a PIL image, to "
      "the pixel)";
  op.params = {ParamSpec::choice("policy", "imagenet", {"imagenet", "cifar10", "svhn"},
                                 "the learned policy (torchvision's AutoAugmentPolicy)")};
  for (ParamSpec& p : policy_common_params()) op.params.push_back(std::move(p));
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    const std::string policy = params.choice("policy");
    return make_augment_policy_op(
        "auto_augment", params, context, PolicySpace::kAutoAugment, 10,
        [policy](CounterRng& rng) { return draw_auto_augment(rng, policy); });
  };
  return op;
}

}  // namespace stoker::ops
