// cutmix: torchvision.transforms.v2.CutMix(alpha, num_classes) on the finished batch: a box of
// every image (float32, after normalize) replaced by the previous image's, its size drawn from
// lam ~ Beta(alpha, alpha), and the labels made soft targets by the box's share
// (torchvision_mixing.h). Equal to torchvision's CutMix for the same box
// (ops/torchvision_mixing_test.cc).

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/torchvision_mixing.h"

namespace stoker::ops {

OpSpec cutmix() {
  OpSpec op;
  op.name = "cutmix";
  op.role = OpRole::kBatch;
  op.python_class = "CutMix";
  op.doc =
      "A box of each image of the batch replaced by the previous image's, the labels made soft "
      "targets by its area (torchvision's CutMix)";
  op.params = {
      ParamSpec::real("alpha", 1.0, "the Beta distribution's parameter of the weight").above(0),
      ParamSpec::integer("num_classes", 1000, "classes of the soft targets").at_least(1),
  };
  op.make_batch = [](const Params& params) -> Result<std::shared_ptr<const BatchTransform>> {
    const double alpha = params.real("alpha");
    return torchvision_mixing(
        "cutmix", params.integer("num_classes"),
        [alpha](const BatchInput& input, const std::string& name, int64_t num_classes) {
          CounterRng rng = input.rng();
          return torchvision_mix(input, rng, /*cutmix=*/true, alpha, num_classes, name);
        });
  };
  return op;
}

}  // namespace stoker::ops
