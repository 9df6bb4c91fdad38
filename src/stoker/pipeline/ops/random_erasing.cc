// random_erasing: torchvision's RandomErasing(p, scale, ratio, value) on the float32 image
// [C, H, W] after normalize: with probability p (the stream's first draw, next_double() < p) a
// rectangle (random_erasing.h) is set to `value` (one number, or one per channel), or with
// fill=random to values drawn from N(0, 1) per element (torchvision's value="random"; stoker's
// normal draws, Box-Muller pairs on the sample's stream, row by row). Pixels equal
// torchvision.transforms.v2.functional.erase for the same rectangle and value
// (ops/random_erasing_test.cc).

#include "stoker/pipeline/ops/random_erasing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/channel_count.h"
#include "stoker/pipeline/ops/normal_draw.h"

namespace stoker::ops {

EraseBox draw_erase_box(CounterRng& rng, int64_t height, int64_t width, double scale_min,
                        double scale_max, double ratio_min, double ratio_max) {
  const double area = static_cast<double>(height * width);
  const float log_min = std::log(static_cast<float>(ratio_min));
  const float log_max = std::log(static_cast<float>(ratio_max));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const float fraction = static_cast<float>(
        scale_min + (scale_max - scale_min) * static_cast<double>(rng.next_float()));
    const float aspect = std::exp(log_min + (log_max - log_min) * rng.next_float());
    const double erase_area = area * fraction;
    // Python's round: half to even, std::nearbyint's default rounding. Compared before the
    // cast: a ratio past float32's range makes a side infinite (torchvision raises there).
    const double h = std::nearbyint(std::sqrt(erase_area * aspect));
    const double w = std::nearbyint(std::sqrt(erase_area / aspect));
    if (!(h < static_cast<double>(height) && w < static_cast<double>(width))) continue;
    EraseBox box{true, 0, 0, static_cast<int64_t>(h), static_cast<int64_t>(w)};
    box.top =
        static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(height - box.height + 1)));
    box.left =
        static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(width - box.width + 1)));
    return box;
  }
  return {};
}

namespace {

class RandomErasing : public FloatOp {
 public:
  RandomErasing(const Params& params, const std::vector<int64_t>& shape)
      : p_(params.real("p")),
        scale_(params.reals("scale")),
        ratio_(params.reals("ratio")),
        value_(params.reals("value")),
        random_(params.choice("fill") == "random"),
        channels_(shape[0]),
        height_(shape[1]),
        width_(shape[2]) {}

  Status apply(const SampleInput& input, float* values) const override {
    CounterRng rng = input.rng();
    if (!(rng.next_double() < p_)) return Status::ok();
    const EraseBox box =
        draw_erase_box(rng, height_, width_, scale_[0], scale_[1], ratio_[0], ratio_[1]);
    if (!box.found) return Status::ok();
    for (int64_t c = 0; c < channels_; ++c) {
      const float value = static_cast<float>(value_[value_.size() == 1 ? 0 : c]);
      for (int64_t y = box.top; y < box.top + box.height; ++y) {
        float* row = values + (c * height_ + y) * width_ + box.left;
        if (random_) {
          standard_normals(rng, row, static_cast<size_t>(box.width));
        } else {
          std::fill(row, row + box.width, value);
        }
      }
    }
    return Status::ok();
  }

 private:
  const double p_;
  const std::vector<double> scale_, ratio_, value_;
  const bool random_;
  const int64_t channels_, height_, width_;
};

}  // namespace

OpSpec random_erasing() {
  OpSpec op;
  op.name = "random_erasing";
  op.role = OpRole::kFloat;
  op.backend = OpBackend::kTensor;
  op.python_class = "RandomErasing";
  op.doc =
      "A random rectangle of the normalised image erased with probability p (torchvision's "
      "RandomErasing, to the value)";
  op.params = {
      ParamSpec::real("p", 0.5, "probability of erasing").in(0, 1),
      ParamSpec::reals("scale", {0.02, 0.33}, "smallest and largest erased area, as fractions", 2,
                       2)
          .in(0, 1),
      ParamSpec::reals("ratio", {0.3, 3.3}, "smallest and largest aspect ratio (height / width)", 2,
                       2)
          .above(0),
      ParamSpec::reals("value", {0.0}, "the erased value: one, or one per channel", 1,
                       ParamSpec::kAnyCount),
      ParamSpec::choice("fill", "value", {"value", "random"},
                        "value: the value above; random: every element drawn from N(0, 1)"),
  };
  op.make_float = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const FloatOp>> {
    const std::vector<int64_t>& shape = context.shape;
    if (shape.size() != 3)
      return invalid_argument(
          fmt::format("field '{}': random_erasing needs images [C, H, W], not "
                      "{} dimensions",
                      context.field, shape.size()));
    if (Status s =
            check_per_channel(context, "random_erasing", "value", params.reals("value").size());
        !s.is_ok())
      return s;
    for (const char* pair : {"scale", "ratio"})
      if (params.reals(pair)[0] > params.reals(pair)[1])
        return invalid_argument(
            fmt::format("field '{}': random_erasing: {} must be (min, max)", context.field, pair));
    return std::shared_ptr<const FloatOp>(std::make_shared<RandomErasing>(params, shape));
  };
  return op;
}

}  // namespace stoker::ops
