// random_invert: torchvision's RandomInvert(p) on a PIL image, pixel for pixel, for a uint8
// image [C, H, W], C 1 or 3: with probability p every value v becomes 255 - v (PIL's
// ImageOps.invert). One draw per sample (channel_table.h: next_double() < p).
// ops/random_invert_test.cc compares with torchvision.

#include "stoker/pipeline/ops/channel_table.h"

namespace stoker::ops {

OpSpec random_invert() {
  OpSpec op;
  op.name = "random_invert";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomInvert";
  op.doc =
      "The image inverted with probability p (torchvision's RandomInvert on a PIL image, to the "
      "pixel)";
  op.params = {probability_param("inverting the image")};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    const ChannelTable table = invert_table();
    return make_channel_table_op("random_invert", params.real("p"), context,
                                 [table](const uint8_t*, size_t) { return table; });
  };
  return op;
}

}  // namespace stoker::ops
