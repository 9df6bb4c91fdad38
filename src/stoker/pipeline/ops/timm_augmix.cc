// timm_augmix: timm's AugMix as create_transform(auto_augment="augmix-...") builds it, pixel for
// pixel on a PIL image, for a uint8 image [C, H, W], C 1 or 3: the config string, the
// operations, the float32 mix and the draws of timm_augmix.h; `fill`, `translate_pct` and
// `interpolation` timm's hparams, as timm_rand_augment's (create_transform gives translate_pct
// 0.3). ops/timm_augmix_test.cc runs timm's own AugMixAugment, built from the same config, on
// the same draws.

#include "stoker/pipeline/ops/timm_augmix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/beta_draw.h"
#include "stoker/pipeline/ops/pil_enhance.h"
#include "stoker/pipeline/ops/timm_config_numbers.h"
#include "stoker/util/utf8.h"

namespace stoker::ops {

Result<TimmAugMixConfig> parse_timm_augmix(const std::string& config) {
  const auto fail = [&](const std::string& what) {
    return invalid_argument(fmt::format("timm AugMix config '{}': {}", printable(config), what));
  };
  std::vector<std::string> sections;
  size_t begin = 0;
  while (true) {
    const size_t dash = config.find('-', begin);
    sections.push_back(config.substr(begin, dash - begin));
    if (dash == std::string::npos) break;
    begin = dash + 1;
  }
  if (sections[0] != "augmix") return fail("must start with 'augmix'");
  TimmAugMixConfig out;
  out.magnitude_std = std::numeric_limits<double>::infinity();
  bool std_given = false;  // timm keeps the first mstd (hparams.setdefault)
  for (size_t k = 1; k < sections.size(); ++k) {
    const std::string& section = sections[k];
    const size_t digit = section.find_first_of("0123456789");
    if (section.empty() || digit == std::string::npos || digit == 0)
      return fail(
          fmt::format("section '{}' is not a key and a number (m3, w3, d0, a1, b0, mstd0.5)",
                      printable(section)));
    const std::string key = section.substr(0, digit);
    const std::string value = section.substr(digit);
    if (key == "mstd" || key == "a") {
      const std::optional<double> number = plain_float(value);
      if (!number) return fail(fmt::format("{} '{}' is not a number", key, printable(value)));
      if (key == "a") {
        if (*number < 0.001 || *number > 1000)
          return fail(fmt::format("a{} is not in [0.001, 1000]", printable(value)));
        out.alpha = *number;
      }
      if (key == "mstd" && !std_given) {
        out.magnitude_std = *number;
        std_given = true;
      }
      continue;
    }
    if (key != "m" && key != "w" && key != "d" && key != "b")
      return fail(fmt::format("unknown section '{}' (m, w, d, a, b, mstd)", printable(section)));
    const std::optional<int64_t> number = plain_int(value);
    if (!number)
      return fail(
          fmt::format("{} '{}' is not a whole number of at most 9 digits", key, printable(value)));
    if (key == "m") out.magnitude = static_cast<double>(*number);
    if (key == "w") out.width = *number;
    if (key == "d") out.depth = *number;
    if (key == "b") out.blended = *number != 0;
  }
  if (out.width < 1 || out.width > 64) return fail(fmt::format("w{} is not in [1, 64]", out.width));
  if (out.depth > 64) return fail(fmt::format("d{} is over 64", out.depth));
  return out;
}

const std::vector<TimmOp>& timm_augmix_ops() {
  using T = TimmOp;
  static const std::vector<TimmOp> kOps = {T::kAutoContrast,
                                           T::kColorIncreasing,
                                           T::kContrastIncreasing,
                                           T::kBrightnessIncreasing,
                                           T::kSharpnessIncreasing,
                                           T::kEqualize,
                                           T::kRotate,
                                           T::kPosterizeIncreasing,
                                           T::kSolarizeIncreasing,
                                           T::kShearX,
                                           T::kShearY,
                                           T::kTranslateXRel,
                                           T::kTranslateYRel};
  return kOps;
}

TimmAugMixDraw draw_timm_augmix(CounterRng& rng, const TimmAugMixConfig& config) {
  TimmAugMixDraw draw;
  draw.blended = config.blended;
  for (double w : dirichlet_draw(rng, config.alpha, config.width))
    draw.weights.push_back(static_cast<float>(w));
  draw.mix = static_cast<float>(beta_draw(rng, config.alpha, config.alpha));
  const std::vector<TimmOp>& ops = timm_augmix_ops();
  for (int64_t i = 0; i < config.width; ++i) {
    const int64_t depth = config.depth > 0 ? config.depth : 1 + rng.uniform_below(3);
    std::vector<TimmStepDraw>& chain = draw.chains.emplace_back();
    for (int64_t k = 0; k < depth; ++k) {
      TimmStepDraw& step = chain.emplace_back();
      step.op = ops[rng.uniform_below(ops.size())];
      step.applied = true;
      draw_timm_step_outcome(rng, config.magnitude, config.magnitude_std, step);
    }
  }
  return draw;
}

void apply_timm_augmix(const TimmAugMixDraw& draw, const TimmOpSettings& settings, uint8_t* pixels,
                       int64_t channels, int64_t height, int64_t width) {
  const size_t size = static_cast<size_t>(channels * height * width);
  std::vector<float> mixed(size, 0.0f);
  std::vector<uint8_t> chain_image(size);
  const std::vector<uint8_t> original(pixels, pixels + size);
  std::vector<float> alphas(draw.weights.size());  // blended: each chain's blend
  float left = 1.0f;
  for (size_t i = draw.weights.size(); i-- > 0;) {
    alphas[i] = (draw.weights[i] * draw.mix) / left;
    left *= 1.0f - alphas[i];
  }
  for (size_t i = 0; i < draw.chains.size(); ++i) {
    std::copy(original.begin(), original.end(), chain_image.begin());
    for (const TimmStepDraw& step : draw.chains[i])
      apply_timm_step(step, 10.0, settings, chain_image.data(), channels, height, width);
    if (draw.blended) {
      for (size_t p = 0; p < size; ++p) pixels[p] = pil_blend(pixels[p], chain_image[p], alphas[i]);
      continue;
    }
    const float weight = draw.weights[i];
    for (size_t p = 0; p < size; ++p) {
      const float product = weight * static_cast<float>(chain_image[p]);
      mixed[p] += product;
    }
  }
  if (draw.blended) return;
  for (size_t p = 0; p < size; ++p) {
    const float clipped = std::min(255.0f, std::max(0.0f, mixed[p]));
    pixels[p] = pil_blend(pixels[p], static_cast<uint8_t>(clipped), draw.mix);
  }
}

namespace {

class TimmAugMix : public PixelOp {
 public:
  TimmAugMix(TimmAugMixConfig config, TimmOpSettings settings, const std::vector<int64_t>& shape)
      : config_(config),
        settings_(std::move(settings)),
        channels_(shape[0]),
        height_(shape[1]),
        width_(shape[2]) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    CounterRng rng = input.rng();
    apply_timm_augmix(draw_timm_augmix(rng, config_), settings_, pixels, channels_, height_,
                      width_);
    return Status::ok();
  }

 private:
  const TimmAugMixConfig config_;
  const TimmOpSettings settings_;
  const int64_t channels_, height_, width_;
};

}  // namespace

OpSpec timm_augmix() {
  return timm_config_op<TimmAugMixConfig>(
      "timm_augmix", "TimmAugMix",
      "timm's AugMix from its config string (create_transform's auto_augment='augmix-...', on "
      "a PIL image, to the pixel)",
      "augmix-m3-w3", "timm's string: augmix, then m, w, d, a, b0, mstd sections",
      parse_timm_augmix,
      [](TimmAugMixConfig config, TimmOpSettings settings,
         const std::vector<int64_t>& shape) -> std::shared_ptr<const PixelOp> {
        return std::make_shared<TimmAugMix>(config, std::move(settings), shape);
      });
}

}  // namespace stoker::ops
