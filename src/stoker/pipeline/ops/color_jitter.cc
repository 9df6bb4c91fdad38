// color_jitter: torchvision's ColorJitter(brightness, contrast, saturation, hue) on a uint8
// image [C, H, W], C 1 or 3: pixel for pixel torchvision.transforms.v2.functional's
// adjust_brightness, adjust_contrast, adjust_saturation and adjust_hue on uint8 tensors
// (torchvision 0.26; ops/color_jitter_test.cc compares), in a random order.
//
// Per sample, seven draws from the operation's own stream (field_pipeline.h), u0 ... u6 =
// CounterRng::next_double(), whichever adjustments are on:
//   brightness factor  fb = lo + (hi - lo) * u1 on [max(0, 1 - brightness), 1 + brightness]
//   contrast factor    fc = the same with u2 on [max(0, 1 - contrast), 1 + contrast]
//   saturation factor  fs = the same with u3 on [max(0, 1 - saturation), 1 + saturation]
//   hue factor         fh = -hue + 2 * hue * u4 on [-hue, hue]
//   order              brightness before contrast if u0 < 0.5; saturation then goes in at
//                      place floor(3 * u5) of those two (0: first), and hue at place
//                      floor(4 * u6) of the three: each of the 24 orders is equally likely, as
//                      torchvision's randperm(4) (whose draws it does not repeat)
// A parameter of 0 leaves its adjustment out (torchvision's None). A 1-channel image has no
// saturation or hue to change (torchvision leaves it as it is).
//
// torchvision's uint8 arithmetic, in float32 with f = float(factor), m = float(1 - factor),
// truncating to uint8:
//   brightness  out = uint8(min(x * f, 255))
//   contrast    grey = floor(torchvision_grey(r, g, b)) per pixel (torchvision_grey.h; 1
//               channel: the pixel), mean = float(sum of grey) / float(H * W),
//               out = uint8(clamp(fma(mean, m, x * f), 0, 255))
//   saturation  out = uint8(clamp(fma(grey, m, x * f), 0, 255)), grey the pixel's own
//   hue         torchvision_hue.h, through HSV, with float(fh)
// Once f and the mean are known, brightness and contrast make each output from x alone: a table
// of 256 values. The sum of grey levels here is exact; torchvision's float32 sum is exact too up
// to 2^24 (any image up to 256 x 256), and may differ in its last bit beyond.
//
// With backend=pil, the same draws and order give torchvision's ColorJitter on a PIL image
// (its PIL backend: a step before PILToTensor/ToImage/ToTensor), whose pixels differ:
//   brightness, contrast, saturation  PIL's ImageEnhance.Brightness, Contrast and Color
//               .enhance(float(f)) (pil_enhance.h)
//   hue         torchvision's PIL adjust_hue: convert("HSV") (pil_hsv.h), h + uint8(int32(fh *
//               255)) wrapping modulo 256, back to RGB

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/pil_enhance.h"
#include "stoker/pipeline/ops/pil_hsv.h"
#include "stoker/pipeline/ops/torchvision_grey.h"
#include "stoker/pipeline/ops/torchvision_hue.h"

namespace stoker::ops {
namespace {

using Table = std::array<uint8_t, 256>;

enum Adjustment { kBrightness, kContrast, kSaturation, kHue };

void apply_table(const Table& table, uint8_t* pixels, size_t n) {
  for (size_t i = 0; i < n; ++i) pixels[i] = table[pixels[i]];
}

// The factor drawn by `u` from [max(0, 1 - amount), 1 + amount], at most 1e30: a larger one would
// be infinite in float32 and make 0 * f a NaN (found by fuzz/op_call_fuzz.cc; torchvision's
// pixels are NaN casts there), while any factor past 255 saturates every non-zero pixel.
double factor(double amount, double u) {
  const double lo = std::max(0.0, 1 - amount);
  return std::min(lo + (1 + amount - lo) * u, 1e30);
}

class ColorJitter : public PixelOp {
 public:
  ColorJitter(const Params& params, const std::vector<int64_t>& shape)
      : amounts_{params.real("brightness"), params.real("contrast"), params.real("saturation"),
                 params.real("hue")},
        pil_(params.choice("backend") == "pil"),
        shape_(shape),
        channels_(shape[0]),
        plane_(static_cast<size_t>(shape[1] * shape[2])) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    CounterRng rng = input.rng();
    const double first = rng.next_double();
    double factors[4];
    for (int a = kBrightness; a <= kSaturation; ++a)
      factors[a] = factor(amounts_[a], rng.next_double());
    factors[kHue] = -amounts_[kHue] + 2 * amounts_[kHue] * rng.next_double();
    std::vector<Adjustment> order = {kBrightness, kContrast};
    if (first >= 0.5) std::swap(order[0], order[1]);
    order.insert(order.begin() + static_cast<int>(3 * rng.next_double()), kSaturation);
    order.insert(order.begin() + static_cast<int>(4 * rng.next_double()), kHue);
    for (const Adjustment a : order) {
      if (amounts_[a] > 0) adjust(a, factors[a], pixels);
    }
    return Status::ok();
  }

 private:
  void adjust(Adjustment a, double factor, uint8_t* pixels) const {
    if (pil_) return adjust_pil(a, factor, pixels);
    switch (a) {
      case kBrightness:
        return adjust_brightness(pixels, factor);
      case kContrast:
        return adjust_contrast(pixels, factor);
      case kSaturation:
        if (channels_ == 3) adjust_saturation(pixels, factor);
        return;
      case kHue:
        if (channels_ == 3) adjust_hue(pixels, static_cast<float>(factor));
        return;
    }
  }

  void adjust_pil(Adjustment a, double factor, uint8_t* pixels) const {
    static constexpr PilEnhance kEnhance[] = {PilEnhance::kBrightness, PilEnhance::kContrast,
                                              PilEnhance::kColor};
    if (a != kHue) {
      pil_enhance_image(kEnhance[a], static_cast<float>(factor), pixels, shape_[0], shape_[1],
                        shape_[2]);
    } else if (channels_ == 3) {
      pil_adjust_hue(pixels, plane_, factor);
    }
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
    for (int x = 0; x < 256; ++x) table[x] = blend(x, f, mean, mix);
    apply_table(table, pixels, channels_ * plane_);
  }

  void adjust_saturation(uint8_t* pixels, double factor) const {
    const float f = static_cast<float>(factor);
    const float mix = static_cast<float>(1.0 - factor);
    uint8_t* g = pixels + plane_;
    uint8_t* b = pixels + 2 * plane_;
    for (size_t i = 0; i < plane_; ++i) {
      const float grey = std::floor(torchvision_grey(pixels[i], g[i], b[i]));
      pixels[i] = blend(pixels[i], f, grey, mix);
      g[i] = blend(g[i], f, grey, mix);
      b[i] = blend(b[i], f, grey, mix);
    }
  }

  void adjust_hue(uint8_t* pixels, float factor) const {
    uint8_t* g = pixels + plane_;
    uint8_t* b = pixels + 2 * plane_;
    for (size_t i = 0; i < plane_; ++i) torchvision_hue(&pixels[i], &g[i], &b[i], factor);
  }

  // torchvision's _blend of x with `other` in uint8: x * f + other * mix, one rounding.
  static uint8_t blend(int x, float f, float other, float mix) {
    return static_cast<uint8_t>(std::clamp(std::fma(other, mix, x * f), 0.0f, 255.0f));
  }

  const double amounts_[4];  // by Adjustment
  const bool pil_;           // backend=pil: PIL's kernels
  const std::vector<int64_t> shape_;
  const size_t channels_;
  const size_t plane_;  // H * W
};

}  // namespace

OpSpec color_jitter() {
  OpSpec op;
  op.name = "color_jitter";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kTensor;
  op.python_class = "ColorJitter";
  op.doc =
      "Random brightness, contrast, saturation and hue of a uint8 image, in a random order "
      "(torchvision's ColorJitter, to the pixel)";
  const auto factor_range = [](const char* name) {
    return ParamSpec::real(name, 0.0,
                           std::string(name) + " factor drawn from [max(0, 1 - " + name +
                               "), 1 + " + name + "]; 0: unchanged")
        .at_least(0);
  };
  op.params = {
      factor_range("brightness"),
      factor_range("contrast"),
      factor_range("saturation"),
      ParamSpec::real("hue", 0.0, "hue shift drawn from [-hue, hue] (of a turn); 0: unchanged")
          .in(0, 0.5),
      ParamSpec::choice("backend", "tensor", {"tensor", "pil"},
                        "torchvision's kernels it equals: the uint8 tensor's, or the PIL "
                        "image's (ImageEnhance, PIL's HSV)"),
  };
  op.make_pixel = [](const Params& p,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    if (Status s = context.check_image("color_jitter"); !s.is_ok()) return s;
    return std::shared_ptr<const PixelOp>(std::make_shared<ColorJitter>(p, context.shape));
  };
  return op;
}

}  // namespace stoker::ops
