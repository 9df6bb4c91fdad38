// random_vertical_flip: torchvision's RandomVerticalFlip(p) on a uint8 image [C, H, W] (any C):
// with probability p (one draw from the operation's own stream, next_double() < p) the rows are
// mirrored, as torchvision's vflip.
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/mirror.h"

namespace stoker::ops {

OpSpec random_vertical_flip() {
  OpSpec op;
  op.name = "random_vertical_flip";
  op.role = OpRole::kPixel;
  op.python_class = "RandomVerticalFlip";
  op.doc = "The image's rows mirrored with probability p (torchvision's RandomVerticalFlip)";
  op.params = {ParamSpec::real("p", 0.5, "probability of a flip").in(0, 1)};
  op.make_pixel = [](const Params& params, const PixelContext& context) {
    return make_mirror(params.real("p"), Mirror::kRows, context, "random_vertical_flip");
  };
  return op;
}

}  // namespace stoker::ops
