// random_autocontrast: torchvision's RandomAutocontrast(p), pixel for pixel, for a uint8 image
// [C, H, W], C 1 or 3: with probability p each channel stretched from its own [lo, hi] (lowest
// and highest values present) to [0, 255]. On a PIL image (backend "pil") as PIL's
// ImageOps.autocontrast (cutoff 0) tables it: value i becomes trunc(i * scale + offset) clipped
// to [0, 255], scale = 255.0 / (hi - lo) and offset = -lo * scale in doubles, each step rounded
// once (built with -ffp-contract=off); on a uint8 tensor (backend "tensor") as torchvision's
// tensor kernels compute it in float32, v1's or v2's (torchvision_tensor_ops.h's
// torch_autocontrast: the two round otherwise, and PIL's otherwise again). A channel of one
// value stays. One draw per sample (channel_table.h: next_double() < p).
// ops/random_autocontrast_test.cc compares with torchvision.

#include "stoker/pipeline/ops/channel_table.h"
#include "stoker/pipeline/ops/torchvision_tensor_ops.h"

namespace stoker::ops {
OpSpec random_autocontrast() {
  OpSpec op;
  op.name = "random_autocontrast";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kPil;  // its "backend" parameter's default
  op.python_class = "RandomAutocontrast";
  op.doc =
      "Each channel stretched to [0, 255] with probability p (torchvision's RandomAutocontrast, "
      "to the pixel)";
  op.params = {probability_param("stretching the image"),
               ParamSpec::choice("backend", "pil", {"pil", "tensor"},
                                 "torchvision's kernels it equals: the PIL image's "
                                 "(ImageOps.autocontrast) or the uint8 tensor's"),
               ParamSpec::choice("kernels", "v1", {"v1", "v2"},
                                 "on a tensor: transforms v1's or v2's kernels (they round "
                                 "otherwise)")};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    if (params.choice("backend") == "pil")
      return make_channel_table_op("random_autocontrast", params.real("p"), context,
                                   autocontrast_table);
    const TorchKernels kernels =
        params.choice("kernels") == "v1" ? TorchKernels::kV1 : TorchKernels::kV2;
    return make_channel_table_op("random_autocontrast", params.real("p"), context,
                                 [kernels](const uint8_t* channel, size_t count) {
                                   return torch_autocontrast_table(kernels, channel, count);
                                 });
  };
  return op;
}

}  // namespace stoker::ops
