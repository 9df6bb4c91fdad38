// random_autocontrast: torchvision's RandomAutocontrast(p) on a PIL image, pixel for pixel, for a
// uint8 image [C, H, W], C 1 or 3: with probability p each channel stretched from its own
// [lo, hi] (lowest and highest values present) to [0, 255] as PIL's ImageOps.autocontrast
// (cutoff 0) tables it: value i becomes trunc(i * scale + offset) clipped to [0, 255], scale =
// 255.0 / (hi - lo) and offset = -lo * scale in doubles, each step rounded once (built with
// -ffp-contract=off); a channel of one value stays. One draw per sample (channel_table.h:
// next_double() < p). ops/random_autocontrast_test.cc compares with torchvision.

#include "stoker/pipeline/ops/channel_table.h"

namespace stoker::ops {
OpSpec random_autocontrast() {
  OpSpec op;
  op.name = "random_autocontrast";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomAutocontrast";
  op.doc =
      "Each channel stretched to [0, 255] with probability p (torchvision's RandomAutocontrast "
      "on a PIL image, to the pixel)";
  op.params = {probability_param("stretching the image")};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    return make_channel_table_op("random_autocontrast", params.real("p"), context,
                                 autocontrast_table);
  };
  return op;
}

}  // namespace stoker::ops
