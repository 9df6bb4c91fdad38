// random_posterize: torchvision's RandomPosterize(bits, p) on a PIL image, pixel for pixel, for a
// uint8 image [C, H, W], C 1 or 3: with probability p every value keeps its `bits` high bits
// (PIL's ImageOps.posterize, the value AND ~(2^(8 - bits) - 1)). One draw per sample
// (channel_table.h: next_double() < p). ops/random_posterize_test.cc compares with torchvision.

#include "stoker/pipeline/ops/channel_table.h"

namespace stoker::ops {

OpSpec random_posterize() {
  OpSpec op;
  op.name = "random_posterize";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomPosterize";
  op.doc =
      "Each value cut to its high bits with probability p (torchvision's RandomPosterize on a "
      "PIL image, to the pixel)";
  op.params = {ParamSpec::integer("bits", 4, "high bits each value keeps").in(1, 8),
               probability_param("posterizing the image")};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    const ChannelTable table = posterize_table(params.integer("bits"));
    return make_channel_table_op("random_posterize", params.real("p"), context,
                                 [table](const uint8_t*, size_t) { return table; });
  };
  return op;
}

}  // namespace stoker::ops
