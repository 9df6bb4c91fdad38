// random_adjust_sharpness: torchvision's RandomAdjustSharpness(sharpness_factor, p) on a PIL
// image, pixel for pixel, for a uint8 image [C, H, W], C 1 or 3: with probability p PIL's
// ImageEnhance.Sharpness(image).enhance(sharpness_factor), per channel:
//   smooth   PIL's SMOOTH filter: inside the one-pixel border, float32
//            0.5 + row below + row + row above, each row (left * k1 + centre * kc) + right * k1,
//            k1 = 1f / 13f and kc = 5f / 13f (kc in the middle row), clipped to [0, 255] and
//            truncated; the border (and an image under 3 pixels a side) as it is;
//   blend    PIL's Image.blend(smooth, image, a), a = float32(sharpness_factor): smooth if
//            a == 0, the image if a == 1, else float32 smooth + a * (image - smooth) clipped to
//            [0, 255] and truncated.
// Every float step rounded once (built with -ffp-contract=off): the blend's float32 roundings
// decide pixels; the smoothing's cannot (its exact value, a whole number / 13 + 0.5, is never
// within 1/26 of a whole number). A factor past float32's range is infinite, as in PIL: the
// pixels where smooth == image become 0 (PIL's NaN). One draw per sample from the operation's
// own stream: sharpened if CounterRng::next_double() < p (ops/random_adjust_sharpness_test.cc
// compares with torchvision).

#include <algorithm>
#include <vector>

#include "stoker/pipeline/ops/channel_table.h"
#include "stoker/pipeline/ops/pil_enhance.h"

namespace stoker::ops {
namespace {

class RandomAdjustSharpness : public PixelOp {
 public:
  RandomAdjustSharpness(double factor, double p, const std::vector<int64_t>& shape)
      : alpha_(static_cast<float>(factor)),
        p_(p),
        channels_(static_cast<size_t>(shape[0])),
        height_(static_cast<size_t>(shape[1])),
        width_(static_cast<size_t>(shape[2])) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    if (!(input.rng().next_double() < p_) || alpha_ == 1.0f) return Status::ok();
    const size_t plane = height_ * width_;
    std::vector<uint8_t> smooth(plane);
    for (size_t c = 0; c < channels_; ++c) {
      uint8_t* channel = pixels + c * plane;
      pil_smooth(channel, height_, width_, smooth.data());
      if (alpha_ == 0.0f) {
        std::copy(smooth.begin(), smooth.end(), channel);
        continue;
      }
      for (size_t i = 0; i < plane; ++i) channel[i] = pil_blend(smooth[i], channel[i], alpha_);
    }
    return Status::ok();
  }

 private:
  const float alpha_;  // PIL's blend factor: float32
  const double p_;
  const size_t channels_;
  const size_t height_;
  const size_t width_;
};

}  // namespace

OpSpec random_adjust_sharpness() {
  OpSpec op;
  op.name = "random_adjust_sharpness";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kPil;
  op.python_class = "RandomAdjustSharpness";
  op.doc =
      "The image sharpened (or blurred) with probability p (torchvision's "
      "RandomAdjustSharpness on a PIL image, to the pixel)";
  op.params = {
      ParamSpec::real("sharpness_factor", 2.0, "0 the smoothed image, 1 the image, above 1 sharper")
          .at_least(0),
      probability_param("adjusting the sharpness")};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    if (Status s = context.check_image("random_adjust_sharpness"); !s.is_ok()) return s;
    return std::shared_ptr<const PixelOp>(std::make_shared<RandomAdjustSharpness>(
        params.real("sharpness_factor"), params.real("p"), context.shape));
  };
  return op;
}

}  // namespace stoker::ops
