// mixup: torchvision.transforms.v2.MixUp(alpha, num_classes) on the finished batch: every image
// (float32, after normalize) blended with the previous one by lam ~ Beta(alpha, alpha) and the
// labels made soft targets alike (torchvision_mixing.h). Equal to torchvision's MixUp for the
// same lam (ops/torchvision_mixing_test.cc).

#include "stoker/pipeline/ops/torchvision_mixing.h"

namespace stoker::ops {

OpSpec mixup() {
  return torchvision_mixing_spec(
      "mixup", "MixUp",
      "Each image of the batch blended with the previous one, the labels made soft targets "
      "alike (torchvision's MixUp)",
      /*cutmix=*/false);
}

}  // namespace stoker::ops
