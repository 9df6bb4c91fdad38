// cutmix: torchvision.transforms.v2.CutMix(alpha, num_classes) on the finished batch: a box of
// every image (float32, after normalize) replaced by the previous image's, its size drawn from
// lam ~ Beta(alpha, alpha), and the labels made soft targets by the box's share
// (torchvision_mixing.h). Equal to torchvision's CutMix for the same box
// (ops/torchvision_mixing_test.cc).

#include "stoker/pipeline/ops/torchvision_mixing.h"

namespace stoker::ops {

OpSpec cutmix() {
  return torchvision_mixing_spec(
      "cutmix", "CutMix",
      "A box of each image of the batch replaced by the previous image's, the labels made soft "
      "targets by its area (torchvision's CutMix)",
      /*cutmix=*/true);
}

}  // namespace stoker::ops
