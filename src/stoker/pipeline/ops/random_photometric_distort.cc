// random_photometric_distort: torchvision's RandomPhotometricDistort(brightness, contrast,
// saturation, hue, p) on a detection sample's image (PIL's pixels, as the `ssd` preset runs it
// before ToImage); boxes and masks stay as they are. Its draws and order, from the operation's
// own stream (u = next_double(); a factor of range [lo, hi] is float32(lo + (hi - lo) u); the
// permutation the channel order number floor(6 u) of the six in lexicographic order ((0, 1, 2),
// (0, 2, 1), (1, 0, 2), ...), as randperm(3)), with draws "v2" (v2's make_params):
//   for brightness, contrast, saturation, hue in turn: on if u < p, then its factor
//   contrast_before  u < 0.5
//   permuted         u < p, then the permutation
// with draws "v1" (the detection reference's own step: torch.rand(7) first, v = next_float(),
// then each ColorJitter's factor as it runs):
//   v0 < p brightness on; v1 < 0.5 contrast_before, then contrast on if v2 < p (before) or v5 <
//   p (after); v3 < p saturation on; v4 < p hue on; v6 < p permuted; then the factors of those
//   on, in the order they run, then the permutation
// then its transform: brightness, contrast (if contrast_before), saturation, hue, contrast (if
// not), the channels permuted (out channel c = in channel perm[c]). The adjustments are PIL's,
// as torchvision's PIL backend runs them: ImageEnhance.Brightness, Contrast and Color
// .enhance(factor) (pil_enhance.h) and adjust_hue through HSV (pil_hsv.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/pil_enhance.h"
#include "stoker/pipeline/ops/pil_hsv.h"

namespace stoker::ops {
namespace {

enum Distortion { kBrightness, kContrast, kSaturation, kHue, kDistortions };

constexpr std::array<std::array<int, 3>, 6> kPermutations = {
    {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};

class RandomPhotometricDistort : public JointOp {
 public:
  RandomPhotometricDistort(std::array<std::array<double, 2>, kDistortions> ranges, double p,
                           bool v1_draws)
      : ranges_(ranges), p_(p), v1_draws_(v1_draws) {}

  Status apply(const SampleInput& input, JointSample& sample) const override {
    CounterRng rng = input.rng();
    std::optional<float> factors[kDistortions];
    const auto factor = [&](int d) {
      const auto [lo, hi] = ranges_[d];
      factors[d] = static_cast<float>(lo + (hi - lo) * rng.next_double());
    };
    bool contrast_before = false, permute = false;
    if (v1_draws_) {
      float v[7];
      for (float& draw : v) draw = rng.next_float();
      contrast_before = v[1] < 0.5f;
      const auto on = [&](float draw) { return draw < static_cast<float>(p_); };
      const bool contrast = on(contrast_before ? v[2] : v[5]);
      if (on(v[0])) factor(kBrightness);
      if (contrast && contrast_before) factor(kContrast);
      if (on(v[3])) factor(kSaturation);
      if (on(v[4])) factor(kHue);
      if (contrast && !contrast_before) factor(kContrast);
      permute = on(v[6]);
    } else {
      for (int d = 0; d < kDistortions; ++d) {
        if (rng.next_double() < p_) factor(d);
      }
      contrast_before = rng.next_double() < 0.5;
      permute = rng.next_double() < p_;
    }
    const size_t plane = static_cast<size_t>(sample.height * sample.width);
    uint8_t* pixels = sample.image.data();
    const auto enhance = [&](PilEnhance kind, float factor) {
      pil_enhance_image(kind, factor, pixels, 3, sample.height, sample.width);
    };
    if (factors[kBrightness]) enhance(PilEnhance::kBrightness, *factors[kBrightness]);
    if (factors[kContrast] && contrast_before) enhance(PilEnhance::kContrast, *factors[kContrast]);
    if (factors[kSaturation]) enhance(PilEnhance::kColor, *factors[kSaturation]);
    if (factors[kHue]) pil_adjust_hue(pixels, plane, *factors[kHue]);
    if (factors[kContrast] && !contrast_before) enhance(PilEnhance::kContrast, *factors[kContrast]);
    if (permute) {
      const auto& order = kPermutations[static_cast<size_t>(6 * rng.next_double())];
      thread_local std::vector<uint8_t> permuted;
      permuted.resize(sample.image.size());
      for (size_t c = 0; c < 3; ++c)
        std::copy_n(pixels + order[c] * plane, plane, permuted.data() + c * plane);
      sample.image.swap(permuted);
    }
    return Status::ok();
  }

 private:
  const std::array<std::array<double, 2>, kDistortions> ranges_;
  const double p_;
  const bool v1_draws_;
};

}  // namespace

OpSpec random_photometric_distort() {
  OpSpec op;
  op.name = "random_photometric_distort";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kPil;
  op.python_class = "RandomPhotometricDistort";
  op.doc =
      "Random brightness, contrast, saturation and hue, each with probability p, and a random "
      "channel order, of a detection sample's image (torchvision v2's RandomPhotometricDistort "
      "on PIL images)";
  const auto range = [](const char* name, std::vector<double> default_value, double lo, double hi) {
    return ParamSpec::reals(name, std::move(default_value),
                            fmt::format("the {} factor's range [min, max]", name), 2, 2)
        .in(lo, hi);
  };
  op.params = {
      range("brightness", {0.875, 1.125}, 0, 1e9),
      range("contrast", {0.5, 1.5}, 0, 1e9),
      range("saturation", {0.5, 1.5}, 0, 1e9),
      range("hue", {-0.05, 0.05}, -0.5, 0.5),
      ParamSpec::real("p", 0.5, "the probability of each distortion and of the channel order")
          .in(0, 1),
      ParamSpec::choice("draws", "v2", {"v2", "v1"},
                        "whose draws, in whose order: v2's make_params, or the detection "
                        "reference's v1 step (torch.rand(7), then each factor as it runs)"),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    std::array<std::array<double, 2>, kDistortions> ranges;
    const char* const names[kDistortions] = {"brightness", "contrast", "saturation", "hue"};
    for (int d = 0; d < kDistortions; ++d) {
      const std::vector<double> range = p.reals(names[d]);
      if (range[0] > range[1])
        return invalid_argument(
            fmt::format("random_photometric_distort: {} [{}, {}] has its minimum above its maximum",
                        names[d], range[0], range[1]));
      ranges[d] = {range[0], range[1]};
    }
    return std::shared_ptr<const JointOp>(
        std::make_shared<RandomPhotometricDistort>(ranges, p.real("p"), p.choice("draws") == "v1"));
  };
  return op;
}

}  // namespace stoker::ops
