// random_horizontal_flip: torchvision's RandomHorizontalFlip(p) on a uint8 image [C, H, W] (any
// C): with probability p (one draw from the operation's own stream, next_double() < p) the
// columns are mirrored, as torchvision's hflip. After RandomResizedCrop, stoker.transforms fuses
// the flip into the crop's resize instead (its `flip` parameter), which costs nothing.
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/mirror.h"

namespace stoker::ops {

OpSpec random_horizontal_flip() {
  return mirror_spec(
      "random_horizontal_flip", "RandomHorizontalFlip",
      "The image's columns mirrored with probability p (torchvision's RandomHorizontalFlip)",
      Mirror::kColumns);
}

}  // namespace stoker::ops
