// random_solarize: torchvision's RandomSolarize(threshold, p) on a PIL image, pixel for pixel,
// for a uint8 image [C, H, W], C 1 or 3: with probability p every value v >= threshold becomes
// 255 - v, the others stay (PIL's ImageOps.solarize). One draw per sample (channel_table.h:
// next_double() < p). ops/random_solarize_test.cc compares with torchvision.

#include "stoker/pipeline/ops/channel_table.h"

namespace stoker::ops {

OpSpec random_solarize() {
  OpSpec op;
  op.name = "random_solarize";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomSolarize";
  op.doc =
      "Values at or above a threshold inverted with probability p (torchvision's RandomSolarize "
      "on a PIL image, to the pixel)";
  op.params = {ParamSpec::real("threshold", 128, "the lowest value inverted").in(0, 255),
               probability_param("solarizing the image")};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    const ChannelTable table = solarize_table(params.real("threshold"));
    return make_channel_table_op("random_solarize", params.real("p"), context,
                                 [table](const uint8_t*, size_t) { return table; });
  };
  return op;
}

}  // namespace stoker::ops
