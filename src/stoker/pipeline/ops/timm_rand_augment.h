#pragma once
// timm's RandAugment (timm/data/auto_augment.py, timm 1.0): its config string, its operations
// on a PIL image ("L" or "RGB") and the draws a sample makes, for ops/timm_rand_augment.cc, its
// test and the fuzz target.
//
// The config (rand_augment_transform's grammar): "rand" then sections joined by "-", in any
// order: m<int> magnitude (10), n<int> operations per image (2), p<float> probability of each
// (0.5), mstd<float> magnitude noise (0; above 100: uniform on [0, m]), mmax<int> magnitude
// bound (0: 10), inc<int> the increasing operations if not 0, t<name> the list: "weights" or
// "3aw" (timm's weighted lists, drawn without replacement), "3a" (SolarizeIncreasing,
// Desaturate, GaussianBlur), else the standard or increasing list.
// Stricter than timm: a section timm would skip (no number, empty) or answer with an assertion
// is an error naming it; numbers are plain (digits, a point, an exponent).
//
// The operations (AugmentOp.__call__ with its level functions, in doubles as Python computes
// them; level the magnitude after noise, clamped to [0, mmax or 10]; a sign where timm negates):
//   AutoContrast, Equalize, Invert   ImageOps'
//   Rotate                           Image.rotate(+-level / 10 * 30, filter, fillcolor)
//   Posterize(Increasing)            ImageOps.posterize(int(level / 10 * 4)) (4 - that), the
//                                    image as it is at 8 bits or more
//   Solarize(Increasing)             ImageOps.solarize(min(256, int(level / 10 * 256)))
//                                    (256 - that)
//   SolarizeAdd                      values under 128 plus min(128, int(level / 10 * 110)),
//                                    at most 255
//   Color, Contrast, Brightness,     ImageEnhance's .enhance(level / 10 * 1.8 + 0.1);
//   Sharpness (Increasing)           (max(0.1, 1 +- level / 10 * 0.9))
//   ShearX, ShearY                   Image.transform(AFFINE, (1, +-level / 10 * 0.3, 0, 0, 1, 0))
//                                    (the shear in the fourth place for y)
//   TranslateXRel, TranslateYRel     Image.transform(AFFINE, (1, 0, d, 0, 1, 0)) (d in the last
//                                    place for y), d = +-level / 10 * translate_pct * W (H)
//   Desaturate                       ImageEnhance.Color's .enhance(1 - clamp(0.5 + 0.5 *
//                                    level / 10, 0.5, 1))
//   GaussianBlur                     ImageFilter.GaussianBlur(clamp(0.1 + 1.9 * level / 10,
//                                    0.1, 2)) (pil_gaussian_blur.h)
// The geometric ones with `fillcolor` and a filter: the given one, or timm's "random" choice of
// BILINEAR and BICUBIC per operation.
//
// A sample's draws, from the operation's own stream, every one made whatever the outcome: per
// layer of n, the operation (uniform_below(list size); "weights": next_double() against the
// cumulative weights of those not drawn yet), then applied = next_double() <= p, then the
// step's outcome (draw_timm_step_outcome, shared with timm_augmix.h): z = standard_normal
// (normal_draw.h), r = next_double(), negative = uniform_below(2) == 1, bicubic =
// uniform_below(2) == 1; the magnitude is m * r where mstd is infinite, m + mstd * z where it
// is above 0, else m.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/pil_geometry.h"
#include "stoker/util/rng.h"
#include "stoker/util/status.h"

namespace stoker::ops {

enum class TimmOp {
  kAutoContrast,
  kEqualize,
  kInvert,
  kRotate,
  kPosterize,
  kPosterizeIncreasing,
  kSolarize,
  kSolarizeIncreasing,
  kSolarizeAdd,
  kColor,
  kColorIncreasing,
  kContrast,
  kContrastIncreasing,
  kBrightness,
  kBrightnessIncreasing,
  kSharpness,
  kSharpnessIncreasing,
  kShearX,
  kShearY,
  kTranslateXRel,
  kTranslateYRel,
  kDesaturate,
  kGaussianBlur,
};

// timm's name of `op` ("PosterizeIncreasing").
const char* timm_op_name(TimmOp op);

struct TimmRandAugmentConfig {
  std::vector<TimmOp> ops;      // the list drawn from
  std::vector<double> weights;  // empty: uniform, with replacement; else normalised
  int64_t num_layers = 2;
  double magnitude = 10;
  double prob = 0.5;
  double magnitude_std = 0;  // infinite: uniform on [0, magnitude]
  double magnitude_max = 0;  // 0: 10
};

// `config` read; kInvalidArgument "timm RandAugment config 'TEXT': ..." naming the bad part.
Result<TimmRandAugmentConfig> parse_timm_rand_augment(const std::string& config);

// One layer's draws (above).
struct TimmStepDraw {
  TimmOp op = TimmOp::kAutoContrast;
  bool applied = false;
  double magnitude = 0;  // after noise, before the clamp
  bool negative = false;
  bool bicubic = false;
};

std::vector<TimmStepDraw> draw_timm_rand_augment(CounterRng& rng,
                                                 const TimmRandAugmentConfig& config);

// A step's magnitude (noise of `magnitude_std` around `magnitude`), sign and filter (above).
void draw_timm_step_outcome(CounterRng& rng, double magnitude, double magnitude_std,
                            TimmStepDraw& step);

// One operation on the image [channels, height, width] in place, at `level` (clamped already).
void apply_timm_op(TimmOp op, double level, bool negative, PilFilter filter, double translate_pct,
                   const std::vector<uint8_t>& fill, uint8_t* pixels, int64_t channels,
                   int64_t height, int64_t width);

// What timm's operations take from its hparams: the operation parameters interpolation
// ("random" or one filter), fill (img_mean) and translate_pct, shared by timm_rand_augment and
// timm_augmix.
struct TimmOpSettings {
  std::optional<PilFilter> filter;  // none: timm's "random", the step's drawn one
  double translate_pct = 0.45;
  std::vector<uint8_t> fill;  // one per channel
};
std::vector<ParamSpec> timm_op_params();
// The settings of operation `op`'s parameters for an image of `context`; fill checked.
Result<TimmOpSettings> timm_op_settings(const std::string& op, const Params& params,
                                        const PixelContext& context);

// The OpSpec of a pixel operation made from a timm config string (timm_rand_augment,
// timm_augmix): the parameter `config` (its default and doc), then timm_op_params(); the factory
// parses the string with `parse` and makes the operation with `make`, each error one line
// naming the field and the operation.
template <typename Config>
OpSpec timm_config_op(std::string name, std::string python_class, std::string doc,
                      std::string default_config, std::string config_doc,
                      Result<Config> (*parse)(const std::string&),
                      std::shared_ptr<const PixelOp> (*make)(Config, TimmOpSettings,
                                                             const std::vector<int64_t>&)) {
  OpSpec op;
  op.name = name;
  op.role = OpRole::kPixel;
  op.python_class = std::move(python_class);
  op.backend = OpBackend::kPil;
  op.doc = std::move(doc);
  op.params = {ParamSpec::text("config", std::move(default_config), std::move(config_doc))};
  for (ParamSpec& param : timm_op_params()) op.params.push_back(std::move(param));
  op.make_pixel = [name, parse, make](
                      const Params& params,
                      const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    if (Status s = context.check_image(name); !s.is_ok()) return s;
    Result<Config> config = parse(params.text("config"));
    if (!config.is_ok())
      return invalid_argument("field '" + context.field + "': " + name + ": " +
                              config.status().message());
    Result<TimmOpSettings> settings = timm_op_settings(name, params, context);
    if (!settings.is_ok()) return settings.status();
    return make(std::move(config).value(), std::move(settings).value(), context.shape);
  };
  return op;
}

// A drawn step on the image in place: its magnitude clamped to [0, upper], its filter the
// settings' or the drawn one.
void apply_timm_step(const TimmStepDraw& step, double upper, const TimmOpSettings& settings,
                     uint8_t* pixels, int64_t channels, int64_t height, int64_t width);

}  // namespace stoker::ops
