// mixup_cutmix: torchvision.transforms.v2.RandomChoice([MixUp(mixup_alpha, num_classes),
// CutMix(cutmix_alpha, num_classes)], p), the reference recipe's --mixup-alpha with
// --cutmix-alpha: per batch, the first draw u = next_double() picks MixUp when
// u < p[0] / (p[0] + p[1]), else CutMix, which then draw as mixup and cutmix do
// (torchvision_mixing.h). Equal to torchvision's for the same choice and draws
// (ops/torchvision_mixing_test.cc).

#include <fmt/format.h>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/torchvision_mixing.h"

namespace stoker::ops {

OpSpec mixup_cutmix() {
  OpSpec op;
  op.name = "mixup_cutmix";
  op.role = OpRole::kBatch;
  op.backend = OpBackend::kBoth;
  op.doc =
      "MixUp or CutMix, one of them per batch (torchvision's RandomChoice of MixUp and CutMix)";
  op.params = {
      ParamSpec::real("mixup_alpha", 0.2, "MixUp's Beta parameter").above(0),
      ParamSpec::real("cutmix_alpha", 1.0, "CutMix's Beta parameter").above(0),
      ParamSpec::integer("num_classes", 1000, "classes of the soft targets").at_least(1),
      ParamSpec::reals("p", {0.5, 0.5}, "weights of MixUp and CutMix", 2, 2).at_least(0),
  };
  op.make_batch = [](const Params& params) -> Result<std::shared_ptr<const BatchTransform>> {
    const std::vector<double>& p = params.reals("p");
    if (!(p[0] + p[1] > 0))
      return invalid_argument(
          fmt::format("mixup_cutmix: p must not be all zeros, not [{}, {}]", p[0], p[1]));
    const double mixup_share = p[0] / (p[0] + p[1]);
    const double mixup_alpha = params.real("mixup_alpha");
    const double cutmix_alpha = params.real("cutmix_alpha");
    return torchvision_mixing(
        "mixup_cutmix", params.integer("num_classes"),
        [=](const BatchInput& input, const std::string& name, int64_t num_classes) {
          CounterRng rng = input.rng();
          const bool cutmix = !(rng.next_double() < mixup_share);
          return torchvision_mix(input, rng, cutmix, cutmix ? cutmix_alpha : mixup_alpha,
                                 num_classes, name);
        });
  };
  return op;
}

}  // namespace stoker::ops
