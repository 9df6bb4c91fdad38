// random_equalize: torchvision's RandomEqualize(p) on a PIL image, pixel for pixel, for a uint8
// image [C, H, W], C 1 or 3: with probability p each channel through PIL's ImageOps.equalize
// table of its own histogram h: step = (pixels - h[highest value present]) / 255 (integer
// division); value i becomes (step / 2 + h[0] + ... + h[i - 1]) / step, clipped to 255; a
// channel of step 0 (under 255 pixels below its highest value: one value, a small image) stays.
// One draw per sample (channel_table.h: next_double() < p). ops/random_equalize_test.cc
// compares with torchvision.

#include "stoker/pipeline/ops/channel_table.h"

namespace stoker::ops {
OpSpec random_equalize() {
  OpSpec op;
  op.name = "random_equalize";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomEqualize";
  op.doc =
      "Each channel's histogram equalized with probability p (torchvision's RandomEqualize on a "
      "PIL image, to the pixel)";
  op.params = {probability_param("equalizing the image")};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    return make_channel_table_op("random_equalize", params.real("p"), context, equalize_table);
  };
  return op;
}

}  // namespace stoker::ops
