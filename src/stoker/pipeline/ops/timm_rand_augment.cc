// timm_rand_augment: timm's RandAugment as create_transform(auto_augment="rand-...") builds it,
// pixel for pixel on a PIL image, for a uint8 image [C, H, W], C 1 or 3: the config string,
// the operations and the draws of timm_rand_augment.h; `fill` timm's img_mean (fillcolor),
// `translate_pct` its hparam, `interpolation` its "random" (BILINEAR or BICUBIC per operation)
// or one filter. ops/timm_rand_augment_test.cc runs timm's own RandAugment, built from the same
// config, on the same draws.

#include "stoker/pipeline/ops/timm_rand_augment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/channel_count.h"
#include "stoker/pipeline/ops/channel_table.h"
#include "stoker/pipeline/ops/normal_draw.h"
#include "stoker/pipeline/ops/pil_enhance.h"
#include "stoker/pipeline/ops/pil_gaussian_blur.h"
#include "stoker/pipeline/ops/pil_policy_ops.h"
#include "stoker/pipeline/ops/timm_config_numbers.h"
#include "stoker/util/utf8.h"

namespace stoker::ops {

const char* timm_op_name(TimmOp op) {
  static const char* const kNames[] = {"AutoContrast",
                                       "Equalize",
                                       "Invert",
                                       "Rotate",
                                       "Posterize",
                                       "PosterizeIncreasing",
                                       "Solarize",
                                       "SolarizeIncreasing",
                                       "SolarizeAdd",
                                       "Color",
                                       "ColorIncreasing",
                                       "Contrast",
                                       "ContrastIncreasing",
                                       "Brightness",
                                       "BrightnessIncreasing",
                                       "Sharpness",
                                       "SharpnessIncreasing",
                                       "ShearX",
                                       "ShearY",
                                       "TranslateXRel",
                                       "TranslateYRel",
                                       "Desaturate",
                                       "GaussianBlur"};
  return kNames[static_cast<int>(op)];
}

namespace {

using T = TimmOp;

// timm's _RAND_TRANSFORMS, _RAND_INCREASING_TRANSFORMS, _RAND_WEIGHTED_0, _RAND_3A and
// _RAND_WEIGHTED_3A, in its order.
const std::vector<TimmOp> kStandard = {
    T::kAutoContrast, T::kEqualize,    T::kInvert, T::kRotate,        T::kPosterize,
    T::kSolarize,     T::kSolarizeAdd, T::kColor,  T::kContrast,      T::kBrightness,
    T::kSharpness,    T::kShearX,      T::kShearY, T::kTranslateXRel, T::kTranslateYRel};
const std::vector<TimmOp> kIncreasing = {T::kAutoContrast,
                                         T::kEqualize,
                                         T::kInvert,
                                         T::kRotate,
                                         T::kPosterizeIncreasing,
                                         T::kSolarizeIncreasing,
                                         T::kSolarizeAdd,
                                         T::kColorIncreasing,
                                         T::kContrastIncreasing,
                                         T::kBrightnessIncreasing,
                                         T::kSharpnessIncreasing,
                                         T::kShearX,
                                         T::kShearY,
                                         T::kTranslateXRel,
                                         T::kTranslateYRel};
const std::vector<std::pair<TimmOp, double>> kWeighted = {{T::kRotate, 3},
                                                          {T::kShearX, 2},
                                                          {T::kShearY, 2},
                                                          {T::kTranslateXRel, 1},
                                                          {T::kTranslateYRel, 1},
                                                          {T::kColorIncreasing, .25},
                                                          {T::kSharpnessIncreasing, 0.25},
                                                          {T::kAutoContrast, 0.25},
                                                          {T::kSolarizeIncreasing, .05},
                                                          {T::kSolarizeAdd, .05},
                                                          {T::kContrastIncreasing, .05},
                                                          {T::kBrightnessIncreasing, .05},
                                                          {T::kEqualize, .05},
                                                          {T::kPosterizeIncreasing, 0.05},
                                                          {T::kInvert, 0.05}};
const std::vector<TimmOp> k3a = {T::kSolarizeIncreasing, T::kDesaturate, T::kGaussianBlur};
const std::vector<std::pair<TimmOp, double>> kWeighted3a = {{T::kSolarizeIncreasing, 6},
                                                            {T::kDesaturate, 6},
                                                            {T::kGaussianBlur, 6},
                                                            {T::kRotate, 3},
                                                            {T::kShearX, 2},
                                                            {T::kShearY, 2},
                                                            {T::kPosterizeIncreasing, 1},
                                                            {T::kAutoContrast, 1},
                                                            {T::kColorIncreasing, 1},
                                                            {T::kSharpnessIncreasing, 1},
                                                            {T::kContrastIncreasing, 1},
                                                            {T::kBrightnessIncreasing, 1},
                                                            {T::kEqualize, 1},
                                                            {T::kInvert, 1}};

}  // namespace

Result<TimmRandAugmentConfig> parse_timm_rand_augment(const std::string& config) {
  const auto fail = [&](const std::string& what) {
    return invalid_argument(
        fmt::format("timm RandAugment config '{}': {}", printable(config), what));
  };
  std::vector<std::string> sections;
  size_t begin = 0;
  while (true) {
    const size_t dash = config.find('-', begin);
    sections.push_back(config.substr(begin, dash - begin));
    if (dash == std::string::npos) break;
    begin = dash + 1;
  }
  if (sections[0] != "rand") return fail("must start with 'rand'");
  TimmRandAugmentConfig out;
  bool increasing = false;
  bool std_given = false;  // timm keeps the first mstd and mmax (hparams.setdefault)
  bool max_given = false;
  std::optional<std::string> list;
  for (size_t k = 1; k < sections.size(); ++k) {
    const std::string& section = sections[k];
    if (!section.empty() && section[0] == 't') {
      if (!list) list = section.substr(1);
      continue;
    }
    const size_t digit = section.find_first_of("0123456789");
    if (section.empty() || digit == std::string::npos || digit == 0)
      return fail(
          fmt::format("section '{}' is not a key and a number (m9, n2, p0.5, mstd0.5, "
                      "mmax10, inc1, t<list>)",
                      printable(section)));
    const std::string key = section.substr(0, digit);
    const std::string value = section.substr(digit);
    if (key == "mstd" || key == "p") {
      const std::optional<double> number = plain_float(value);
      if (!number) return fail(fmt::format("{} '{}' is not a number", key, printable(value)));
      if (key == "p") out.prob = *number;
      if (key == "mstd" && !std_given) {  // above 100: uniform sampling
        out.magnitude_std = *number > 100 ? std::numeric_limits<double>::infinity() : *number;
        std_given = true;
      }
      continue;
    }
    if (key != "m" && key != "n" && key != "mmax" && key != "inc")
      return fail(fmt::format("unknown section '{}' (m, n, p, mstd, mmax, inc, t<list>)",
                              printable(section)));
    const std::optional<int64_t> number = plain_int(value);
    if (!number)
      return fail(
          fmt::format("{} '{}' is not a whole number of at most 9 digits", key, printable(value)));
    if (key == "m") out.magnitude = static_cast<double>(*number);
    if (key == "n") out.num_layers = *number;
    if (key == "mmax" && !max_given) {
      out.magnitude_max = static_cast<double>(*number);
      max_given = true;
    }
    if (key == "inc") increasing = *number != 0;
  }
  if (out.num_layers > 1000) return fail(fmt::format("n{} is over 1000", out.num_layers));
  if (list && (*list == "weights" || *list == "3aw")) {
    for (const auto& [op, weight] : *list == "weights" ? kWeighted : kWeighted3a) {
      out.ops.push_back(op);
      out.weights.push_back(weight);
    }
    double sum = 0;
    for (double w : out.weights) sum += w;
    for (double& w : out.weights) w /= sum;
    if (out.num_layers > static_cast<int64_t>(out.ops.size()))
      return fail(
          fmt::format("n{} is more than the {} operations t{} draws without "
                      "replacement",
                      out.num_layers, out.ops.size(), *list));
  } else if (list && *list == "3a") {
    out.ops = k3a;
  } else {
    out.ops = increasing ? kIncreasing : kStandard;  // timm: any other name, the default list
  }
  return out;
}

std::vector<TimmStepDraw> draw_timm_rand_augment(CounterRng& rng,
                                                 const TimmRandAugmentConfig& config) {
  std::vector<TimmStepDraw> steps;
  std::vector<bool> taken(config.ops.size(), false);
  for (int64_t k = 0; k < config.num_layers; ++k) {
    TimmStepDraw step;
    if (config.weights.empty()) {
      step.op = config.ops[rng.uniform_below(config.ops.size())];
    } else {
      double left = 0;
      for (size_t i = 0; i < config.ops.size(); ++i) left += taken[i] ? 0 : config.weights[i];
      const double u = rng.next_double() * left;
      size_t chosen = config.ops.size();
      double below = 0;
      for (size_t i = 0; i < config.ops.size(); ++i) {
        if (taken[i]) continue;
        chosen = i;  // the last one not taken catches rounding at the top
        below += config.weights[i];
        if (u < below) break;
      }
      taken[chosen] = true;
      step.op = config.ops[chosen];
    }
    step.applied = rng.next_double() <= config.prob;
    draw_timm_step_outcome(rng, config.magnitude, config.magnitude_std, step);
    steps.push_back(step);
  }
  return steps;
}

void draw_timm_step_outcome(CounterRng& rng, double magnitude, double magnitude_std,
                            TimmStepDraw& step) {
  const double z = standard_normal(rng);
  const double r = rng.next_double();
  step.magnitude = std::isinf(magnitude_std) ? magnitude * r
                   : magnitude_std > 0       ? magnitude + magnitude_std * z
                                             : magnitude;
  step.negative = rng.uniform_below(2) == 1;
  step.bicubic = rng.uniform_below(2) == 1;
}

void apply_timm_op(TimmOp op, double level, bool negative, PilFilter filter, double translate_pct,
                   const std::vector<uint8_t>& fill, uint8_t* pixels, int64_t channels,
                   int64_t height, int64_t width) {
  const size_t plane = static_cast<size_t>(height * width);
  const double fraction = level / 10.0;
  const auto sign = [negative](double v) { return negative ? -v : v; };
  const auto table = [&](const ChannelTable& fixed) {
    apply_channel_tables(pixels, channels, plane, [&](const uint8_t*, size_t) { return fixed; });
  };
  const auto enhance = [&](PilEnhance kind, bool increasing) {
    double factor = fraction * 1.8 + 0.1;
    if (increasing) factor = std::max(0.1, 1.0 + sign(fraction * 0.9));
    pil_enhance_image(kind, static_cast<float>(factor), pixels, channels, height, width);
  };
  const auto transform = [&](const AffineMatrix& matrix) {
    pil_transform_image(matrix, filter, fill, pixels, channels, height, width);
  };
  // int(level / 10 * k), the level bounded so that the cast is defined (the results agree).
  const auto whole = [&](double k) { return static_cast<int64_t>(std::min(fraction * k, 1e12)); };
  switch (op) {
    case T::kAutoContrast:
      return apply_channel_tables(pixels, channels, plane, autocontrast_table);
    case T::kEqualize:
      return apply_channel_tables(pixels, channels, plane, equalize_table);
    case T::kInvert:
      return table(invert_table());
    case T::kRotate:
      return pil_rotate_image(sign(fraction * 30.0), filter, fill, pixels, channels, height, width);
    case T::kPosterize:
    case T::kPosterizeIncreasing: {
      const int64_t bits = op == T::kPosterize ? whole(4) : 4 - whole(4);
      if (bits < 8) table(posterize_table(bits));
      return;
    }
    case T::kSolarize:
    case T::kSolarizeIncreasing: {
      const int64_t threshold = std::min<int64_t>(256, whole(256));
      return table(
          solarize_table(static_cast<double>(op == T::kSolarize ? threshold : 256 - threshold)));
    }
    case T::kSolarizeAdd: {
      const int64_t add = std::min<int64_t>(128, whole(110));
      ChannelTable lut;
      for (int i = 0; i < 256; ++i)
        lut[i] = static_cast<uint8_t>(i < 128 ? std::min<int64_t>(255, i + add) : i);
      return table(lut);
    }
    case T::kColor:
    case T::kColorIncreasing:
      return enhance(PilEnhance::kColor, op == T::kColorIncreasing);
    case T::kContrast:
    case T::kContrastIncreasing:
      return enhance(PilEnhance::kContrast, op == T::kContrastIncreasing);
    case T::kBrightness:
    case T::kBrightnessIncreasing:
      return enhance(PilEnhance::kBrightness, op == T::kBrightnessIncreasing);
    case T::kSharpness:
    case T::kSharpnessIncreasing:
      return enhance(PilEnhance::kSharpness, op == T::kSharpnessIncreasing);
    case T::kShearX:
      return transform({1, sign(fraction * 0.3), 0, 0, 1, 0});
    case T::kShearY:
      return transform({1, 0, 0, sign(fraction * 0.3), 1, 0});
    case T::kTranslateXRel:
      return transform(
          {1, 0, sign(fraction * translate_pct) * static_cast<double>(width), 0, 1, 0});
    case T::kTranslateYRel:
      return transform(
          {1, 0, 0, 0, 1, sign(fraction * translate_pct) * static_cast<double>(height)});
    case T::kDesaturate: {
      const double grey = std::max(0.5, std::min(1.0, 0.5 + (1.0 - 0.5) * fraction));
      const double factor = std::min(1.0, std::max(0.0, 1.0 - grey));
      return pil_enhance_image(PilEnhance::kColor, static_cast<float>(factor), pixels, channels,
                               height, width);
    }
    case T::kGaussianBlur: {
      const double radius = std::max(0.1, std::min(2.0, 0.1 + (2.0 - 0.1) * fraction));
      return pil_gaussian_blur(static_cast<float>(radius), pixels, channels, height, width);
    }
  }
}

std::vector<ParamSpec> timm_op_params() {
  return {ParamSpec::choice("interpolation", "random", {"random", "bilinear", "bicubic", "nearest"},
                            "the geometric operations' filter: random (bilinear or bicubic each "
                            "time, timm's), or one"),
          ParamSpec::reals("fill", {128},
                           "colour outside a moved image (timm's img_mean): one number, or one "
                           "per channel",
                           1, ParamSpec::kAnyCount)
              .in(0, 255),
          ParamSpec::real("translate_pct", 0.45, "the largest translation, a fraction of the side")
              .in(0, 100)};
}

Result<TimmOpSettings> timm_op_settings(const std::string& op, const Params& params,
                                        const PixelContext& context) {
  const std::vector<double>& fill = params.reals("fill");
  if (Status s = check_per_channel(context, op, "fill", fill.size()); !s.is_ok()) return s;
  TimmOpSettings settings;
  if (params.choice("interpolation") != "random")
    settings.filter = pil_filter(params.choice("interpolation"));
  settings.translate_pct = params.real("translate_pct");
  settings.fill = policy_fill(fill, context.shape[0]);
  return settings;
}

void apply_timm_step(const TimmStepDraw& step, double upper, const TimmOpSettings& settings,
                     uint8_t* pixels, int64_t channels, int64_t height, int64_t width) {
  const double level = std::max(0.0, std::min(step.magnitude, upper));
  const PilFilter filter = settings.filter ? *settings.filter
                           : step.bicubic  ? PilFilter::kBicubic
                                           : PilFilter::kBilinear;
  apply_timm_op(step.op, level, step.negative, filter, settings.translate_pct, settings.fill,
                pixels, channels, height, width);
}

namespace {

// The operation: each sample's draws, each applied step.
class TimmRandAugment : public PixelOp {
 public:
  TimmRandAugment(TimmRandAugmentConfig config, TimmOpSettings settings,
                  const std::vector<int64_t>& shape)
      : config_(std::move(config)),
        settings_(std::move(settings)),
        channels_(shape[0]),
        height_(shape[1]),
        width_(shape[2]) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    CounterRng rng = input.rng();
    const double upper = config_.magnitude_max != 0 ? config_.magnitude_max : 10.0;
    for (const TimmStepDraw& step : draw_timm_rand_augment(rng, config_)) {
      if (step.applied) apply_timm_step(step, upper, settings_, pixels, channels_, height_, width_);
    }
    return Status::ok();
  }

 private:
  const TimmRandAugmentConfig config_;
  const TimmOpSettings settings_;
  const int64_t channels_, height_, width_;
};

}  // namespace

OpSpec timm_rand_augment() {
  return timm_config_op<TimmRandAugmentConfig>(
      "timm_rand_augment", "TimmRandAugment",
      "timm's RandAugment from its config string (create_transform's auto_augment='rand-...', "
      "on a PIL image, to the pixel)",
      "rand-m9-mstd0.5-inc1", "timm's string: rand, then m, n, p, mstd, mmax, inc, t sections",
      parse_timm_rand_augment,
      [](TimmRandAugmentConfig config, TimmOpSettings settings,
         const std::vector<int64_t>& shape) -> std::shared_ptr<const PixelOp> {
        return std::make_shared<TimmRandAugment>(std::move(config), std::move(settings), shape);
      });
}

}  // namespace stoker::ops
