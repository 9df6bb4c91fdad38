// timm_random_erasing: timm's RandomErasing(probability, min_area, max_area, min_aspect,
// max_aspect, mode, min_count, max_count) on the float32 image [C, H, W] after normalize: up to
// count boxes set to 0, a normal colour per box or normal values per element, as
// timm_random_erasing.h draws them. Pixels equal timm's _erase for the same draws
// (ops/timm_random_erasing_test.cc). num_splits (a batch's clean part) acts on a batch only:
// timm's call on one image erases as without it, so the translation leaves it out.

#include "stoker/pipeline/ops/timm_random_erasing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/normal_draw.h"

namespace stoker::ops {

TimmEraseDraw draw_timm_erasing(CounterRng& rng, const TimmErasing& erasing, int64_t channels,
                                int64_t height, int64_t width) {
  TimmEraseDraw draw;
  draw.erased = rng.next_double() <= erasing.probability;
  if (!draw.erased) return draw;
  draw.count = erasing.min_count + static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(
                                       erasing.max_count - erasing.min_count + 1)));
  const double log_min = std::log(erasing.min_aspect);
  const double log_max = std::log(erasing.max_aspect);
  const double area = static_cast<double>(height * width);
  for (int64_t k = 0; k < draw.count; ++k) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      TimmEraseAttempt a;
      a.area = erasing.min_area + (erasing.max_area - erasing.min_area) * rng.next_double();
      a.log_aspect = log_min + (log_max - log_min) * rng.next_double();
      const double target = a.area * area / static_cast<double>(draw.count);
      const double aspect = std::exp(a.log_aspect);
      const double h = std::nearbyint(std::sqrt(target * aspect));
      const double w = std::nearbyint(std::sqrt(target / aspect));
      if (w < static_cast<double>(width) && h < static_cast<double>(height)) {
        a.box = {true, 0, 0, static_cast<int64_t>(h), static_cast<int64_t>(w)};
        a.box.top = static_cast<int64_t>(
            rng.uniform_below(static_cast<uint64_t>(height - a.box.height + 1)));
        a.box.left =
            static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(width - a.box.width + 1)));
        const int64_t values = erasing.mode == "pixel"  ? channels * a.box.height * a.box.width
                               : erasing.mode == "rand" ? channels
                                                        : 0;
        a.values.resize(static_cast<size_t>(values));
        standard_normals(rng, a.values.data(), a.values.size());
        draw.attempts.push_back(std::move(a));
        break;
      }
      draw.attempts.push_back(std::move(a));
    }
  }
  return draw;
}

namespace {

class TimmRandomErasing : public FloatOp {
 public:
  TimmRandomErasing(TimmErasing erasing, const std::vector<int64_t>& shape)
      : erasing_(std::move(erasing)), channels_(shape[0]), height_(shape[1]), width_(shape[2]) {}

  Status apply(const SampleInput& input, float* values) const override {
    CounterRng rng = input.rng();
    const TimmEraseDraw draw = draw_timm_erasing(rng, erasing_, channels_, height_, width_);
    for (const TimmEraseAttempt& a : draw.attempts) {
      if (!a.box.found) continue;
      const EraseBox& box = a.box;
      for (int64_t c = 0; c < channels_; ++c) {
        for (int64_t y = 0; y < box.height; ++y) {
          float* row = values + (c * height_ + box.top + y) * width_ + box.left;
          for (int64_t x = 0; x < box.width; ++x) {
            row[x] = a.values.empty() ? 0.0f
                     : a.values.size() == static_cast<size_t>(channels_)
                         ? a.values[c]
                         : a.values[(c * box.height + y) * box.width + x];
          }
        }
      }
    }
    return Status::ok();
  }

 private:
  const TimmErasing erasing_;
  const int64_t channels_, height_, width_;
};

}  // namespace

OpSpec timm_random_erasing() {
  OpSpec op;
  op.name = "timm_random_erasing";
  op.role = OpRole::kFloat;
  op.backend = OpBackend::kTensor;
  op.python_class = "TimmRandomErasing";
  op.doc =
      "Up to max_count random boxes of the normalised image erased with probability "
      "`probability` (timm's RandomErasing, for the same draws)";
  op.params = {
      ParamSpec::real("probability", 0.5, "probability of erasing").in(0, 1),
      ParamSpec::real("min_area", 0.02, "smallest erased area, a fraction (split among boxes)")
          .in(0, 1),
      ParamSpec::real("max_area", 1.0 / 3.0, "largest erased area, a fraction").in(0, 1),
      ParamSpec::real("min_aspect", 0.3, "smallest aspect ratio (height / width)").in(1e-6, 1e6),
      ParamSpec::real("max_aspect", 0, "largest aspect ratio; 0: 1 / min_aspect").in(0, 1e6),
      ParamSpec::choice("mode", "const", {"const", "rand", "pixel"},
                        "const: 0; rand: a normal colour per box; pixel: normal values"),
      ParamSpec::integer("min_count", 1, "fewest boxes").in(1, 100),
      ParamSpec::integer("max_count", 0, "most boxes (uniform count); 0: min_count").in(0, 100),
  };
  op.make_float = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const FloatOp>> {
    const auto fail = [&](const std::string& what) {
      return invalid_argument(
          fmt::format("field '{}': timm_random_erasing: {}", context.field, what));
    };
    if (context.shape.size() != 3) return fail("needs images [C, H, W]");
    TimmErasing erasing;
    erasing.probability = params.real("probability");
    erasing.min_area = params.real("min_area");
    erasing.max_area = params.real("max_area");
    erasing.min_aspect = params.real("min_aspect");
    erasing.max_aspect =
        params.real("max_aspect") == 0 ? 1.0 / erasing.min_aspect : params.real("max_aspect");
    erasing.mode = params.choice("mode");
    erasing.min_count = params.integer("min_count");
    erasing.max_count =
        params.integer("max_count") == 0 ? erasing.min_count : params.integer("max_count");
    if (erasing.min_area > erasing.max_area)
      return fail(
          fmt::format("min_area {} is above max_area {}", erasing.min_area, erasing.max_area));
    if (erasing.min_count > erasing.max_count)
      return fail(
          fmt::format("min_count {} is above max_count {}", erasing.min_count, erasing.max_count));
    return std::shared_ptr<const FloatOp>(
        std::make_shared<TimmRandomErasing>(std::move(erasing), context.shape));
  };
  return op;
}

}  // namespace stoker::ops
