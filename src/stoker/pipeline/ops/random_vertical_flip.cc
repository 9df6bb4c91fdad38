// random_vertical_flip: torchvision's RandomVerticalFlip(p) on a uint8 image [C, H, W] (any C):
// with probability p (one draw from the operation's own stream, next_double() < p) the rows are
// mirrored, as torchvision's vflip.
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/mirror.h"

namespace stoker::ops {

OpSpec random_vertical_flip() {
  return mirror_spec(
      "random_vertical_flip", "RandomVerticalFlip",
      "The image's rows mirrored with probability p (torchvision's RandomVerticalFlip)",
      Mirror::kRows);
}

}  // namespace stoker::ops
