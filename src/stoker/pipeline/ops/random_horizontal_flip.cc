// random_horizontal_flip: torchvision's RandomHorizontalFlip(p) on a uint8 image [C, H, W] (any
// C): with probability p (one draw from the operation's own stream, next_double() < p) the
// columns are mirrored, as torchvision's hflip. After RandomResizedCrop, stoker.transforms fuses
// the flip into the crop's resize instead (its `flip` parameter), which costs nothing.
#include <algorithm>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/mirror.h"

namespace stoker::ops {

OpSpec random_horizontal_flip() {
  OpSpec op;
  op.name = "random_horizontal_flip";
  op.role = OpRole::kPixel;
  op.python_class = "RandomHorizontalFlip";
  op.doc = "The image's columns mirrored with probability p (torchvision's RandomHorizontalFlip)";
  op.params = {ParamSpec::real("p", 0.5, "probability of a flip").in(0, 1)};
  op.make_pixel = [](const Params& params, const PixelContext& context) {
    return make_mirror(params.real("p"), Mirror::kColumns, context, "random_horizontal_flip");
  };
  return op;
}

}  // namespace stoker::ops
