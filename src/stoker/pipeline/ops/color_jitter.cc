// color_jitter: torchvision's ColorJitter(brightness, contrast) on a uint8 image [C, H, W], C 1
// or 3: pixel for pixel torchvision.transforms.v2.functional's adjust_brightness and
// adjust_contrast on uint8 tensors (torchvision 0.26; ops/color_jitter_test.cc compares).
//
// Per sample, three draws from the operation's own stream (field_pipeline.h), u0, u1, u2 =
// CounterRng::next_double(), whichever adjustments are on:
//   brightness factor  fb = lo + (hi - lo) * u1 on [max(0, 1 - brightness), 1 + brightness]
//   contrast factor    fc = the same with u2 on [max(0, 1 - contrast), 1 + contrast]
//   order              brightness first if u0 < 0.5 (torchvision draws the order too)
// A parameter of 0 leaves its adjustment out (torchvision's None).
//
// torchvision's uint8 arithmetic, in float32 with f = float(factor), truncating to uint8:
//   brightness  out = uint8(min(x * f, 255))
//   contrast    grey = floor(torchvision_grey(r, g, b)) per pixel (torchvision_grey.h; 1
//               channel: the pixel), mean = float(sum of grey) / float(H * W),
//               out = uint8(clamp(fma(mean, float(1 - factor), x * f), 0, 255))
// Once f and the mean are known each output depends on x alone: a table of 256 values. The sum
// of grey levels here is exact; torchvision's float32 sum is exact too up to 2^24 (any image
// up to 256 x 256), and may differ in its last bit beyond.

#include <algorithm>
#include <array>
#include <cmath>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/torchvision_grey.h"

namespace stoker::ops {
namespace {

using Table = std::array<uint8_t, 256>;

void apply_table(const Table& table, uint8_t* pixels, size_t n) {
  for (size_t i = 0; i < n; ++i) pixels[i] = table[pixels[i]];
}

class ColorJitter : public PixelOp {
 public:
  ColorJitter(double brightness, double contrast, const std::vector<int64_t>& shape)
      : brightness_(brightness),
        contrast_(contrast),
        channels_(shape[0]),
        plane_(static_cast<size_t>(shape[1] * shape[2])) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    CounterRng rng = input.rng();
    const double order = rng.next_double();
    const double fb = factor(brightness_, rng.next_double());
    const double fc = factor(contrast_, rng.next_double());
    if (order < 0.5) {
      if (brightness_ > 0) adjust_brightness(pixels, fb);
      if (contrast_ > 0) adjust_contrast(pixels, fc);
    } else {
      if (contrast_ > 0) adjust_contrast(pixels, fc);
      if (brightness_ > 0) adjust_brightness(pixels, fb);
    }
    return Status::ok();
  }

 private:
  static double factor(double amount, double u) {
    const double lo = std::max(0.0, 1 - amount);
    return lo + (1 + amount - lo) * u;
  }

  void adjust_brightness(uint8_t* pixels, double factor) const {
    const float f = static_cast<float>(factor);
    Table table;
    for (int x = 0; x < 256; ++x) table[x] = static_cast<uint8_t>(std::min(x * f, 255.0f));
    apply_table(table, pixels, channels_ * plane_);
  }

  void adjust_contrast(uint8_t* pixels, double factor) const {
    int64_t sum = 0;
    if (channels_ == 1) {
      for (size_t i = 0; i < plane_; ++i) sum += pixels[i];
    } else {
      const uint8_t* g = pixels + plane_;
      const uint8_t* b = pixels + 2 * plane_;
      for (size_t i = 0; i < plane_; ++i)
        sum += static_cast<int64_t>(std::floor(torchvision_grey(pixels[i], g[i], b[i])));
    }
    const float mean = static_cast<float>(sum) / static_cast<float>(plane_);
    const float f = static_cast<float>(factor);
    const float mix = static_cast<float>(1.0 - factor);
    Table table;
    for (int x = 0; x < 256; ++x)
      table[x] = static_cast<uint8_t>(std::clamp(std::fma(mean, mix, x * f), 0.0f, 255.0f));
    apply_table(table, pixels, channels_ * plane_);
  }

  const double brightness_;
  const double contrast_;
  const size_t channels_;
  const size_t plane_;  // H * W
};

}  // namespace

OpSpec color_jitter() {
  OpSpec op;
  op.name = "color_jitter";
  op.role = OpRole::kPixel;
  op.python_class = "ColorJitter";
  op.doc =
      "Random brightness and contrast of a uint8 image, in a random order "
      "(torchvision's ColorJitter without saturation and hue, to the pixel)";
  op.params = {
      ParamSpec::real(
          "brightness", 0.0,
          "brightness factor drawn from [max(0, 1 - brightness), 1 + brightness]; 0: unchanged")
          .at_least(0),
      ParamSpec::real("contrast", 0.0,
                      "contrast factor drawn from [max(0, 1 - contrast), 1 + contrast]; 0: "
                      "unchanged")
          .at_least(0),
  };
  op.make_pixel = [](const Params& p,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    if (Status s = context.check_image("color_jitter"); !s.is_ok()) return s;
    const std::vector<int64_t>& shape = context.shape;
    return std::shared_ptr<const PixelOp>(
        std::make_shared<ColorJitter>(p.real("brightness"), p.real("contrast"), shape));
  };
  return op;
}

}  // namespace stoker::ops
