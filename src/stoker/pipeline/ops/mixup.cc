// mixup: torchvision.transforms.v2.MixUp(alpha, num_classes) on the finished batch: every image
// (float32, after normalize) blended with the previous one by lam ~ Beta(alpha, alpha) and the
// labels made soft targets alike (torchvision_mixing.h). Equal to torchvision's MixUp for the
// same lam (ops/torchvision_mixing_test.cc).

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/torchvision_mixing.h"

namespace stoker::ops {

OpSpec mixup() {
  OpSpec op;
  op.name = "mixup";
  op.role = OpRole::kBatch;
  op.python_class = "MixUp";
  op.doc =
      "Each image of the batch blended with the previous one, the labels made soft targets "
      "alike (torchvision's MixUp)";
  op.params = {
      ParamSpec::real("alpha", 1.0, "the Beta distribution's parameter of the weight").above(0),
      ParamSpec::integer("num_classes", 1000, "classes of the soft targets").at_least(1),
  };
  op.make_batch = [](const Params& params) -> Result<std::shared_ptr<const BatchTransform>> {
    const double alpha = params.real("alpha");
    return torchvision_mixing(
        "mixup", params.integer("num_classes"),
        [alpha](const BatchInput& input, const std::string& name, int64_t num_classes) {
          CounterRng rng = input.rng();
          return torchvision_mix(input, rng, /*cutmix=*/false, alpha, num_classes, name);
        });
  };
  return op;
}

}  // namespace stoker::ops
