// random_grayscale: torchvision's RandomGrayscale(p) on a uint8 image [C, H, W], C 1 or 3: with
// probability p an RGB image becomes its grey level in all three channels, pixel for pixel
// torchvision.transforms.v2.functional.rgb_to_grayscale(image, 3) (torchvision_grey.h,
// truncated to uint8); a 1-channel image stays as it is, as torchvision leaves it. One draw per
// sample from the operation's own stream (field_pipeline.h): grey if CounterRng::next_double()
// < p (ops/random_grayscale_test.cc compares with torchvision). With backend=pil, torchvision's
// RandomGrayscale on a PIL image: PIL's convert("L") (pil_enhance.h's pil_grey) in all three.

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/pil_enhance.h"
#include "stoker/pipeline/ops/torchvision_grey.h"

namespace stoker::ops {
namespace {

class RandomGrayscale : public PixelOp {
 public:
  RandomGrayscale(double p, bool pil, const std::vector<int64_t>& shape)
      : p_(p), pil_(pil), rgb_(shape[0] == 3), plane_(static_cast<size_t>(shape[1] * shape[2])) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    if (!rgb_ || !(input.rng().next_double() < p_)) return Status::ok();
    uint8_t* g = pixels + plane_;
    uint8_t* b = pixels + 2 * plane_;
    for (size_t i = 0; i < plane_; ++i) {
      pixels[i] = g[i] = b[i] = pil_
                                    ? pil_grey(pixels[i], g[i], b[i])
                                    : static_cast<uint8_t>(torchvision_grey(pixels[i], g[i], b[i]));
    }
    return Status::ok();
  }

 private:
  const double p_;
  const bool pil_;  // backend=pil: PIL's grey
  const bool rgb_;
  const size_t plane_;  // H * W
};

}  // namespace

OpSpec random_grayscale() {
  OpSpec op;
  op.name = "random_grayscale";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kTensor;
  op.python_class = "RandomGrayscale";
  op.doc =
      "An RGB image made grey with probability p (torchvision's RandomGrayscale, to the "
      "pixel)";
  op.params = {ParamSpec::real("p", 0.1, "probability of making the image grey").in(0, 1),
               ParamSpec::choice("backend", "tensor", {"tensor", "pil"},
                                 "torchvision's grey it equals: the uint8 tensor's, or the PIL "
                                 "image's (convert(\"L\"))")};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    if (Status s = context.check_image("random_grayscale"); !s.is_ok()) return s;
    const std::vector<int64_t>& shape = context.shape;
    return std::shared_ptr<const PixelOp>(std::make_shared<RandomGrayscale>(
        params.real("p"), params.choice("backend") == "pil", shape));
  };
  return op;
}

}  // namespace stoker::ops
