// trivial_augment_wide against torchvision's TrivialAugmentWide on PIL images: each sample's
// draw (augment_policies.h) handed to torchvision's _apply_op with the magnitude of its own
// _augmentation_space, pixel for pixel, over many samples; bins 31 and 5; fill none, one
// number, one per channel (on "RGB" images); NEAREST, BILINEAR and BICUBIC. With version=v2,
// torchvision v2's TrivialAugmentWide itself run with the same draws (pil_policy_v2.h).
#include <functional>
#include <vector>

#include "stoker/pipeline/ops/augment_policies.h"
#include "stoker/testing/pil_policy.h"
#include "stoker/testing/pil_policy_v2.h"

namespace stoker {
namespace {

// A sample's one TrivialAugmentWide step, as stoker draws it and as v2's script takes it.
std::function<std::vector<ops::PolicyStepDraw>(CounterRng&)> one_step(int64_t bins) {
  return [bins](CounterRng& rng) {
    return std::vector<ops::PolicyStepDraw>{ops::draw_trivial_augment_wide(rng, bins)};
  };
}
std::function<pil_policy_testing::V2PolicySamples::Draws(CounterRng&)> v2_one_step(int64_t bins) {
  return [bins](CounterRng& rng) {
    const ops::PolicyStepDraw step = ops::draw_trivial_augment_wide(rng, bins);
    return pil_policy_testing::V2PolicySamples::Draws{
        {{"steps", pil_policy_testing::v2_policy_steps({step})}}, {step.op}};
  };
}

TEST(TrivialAugmentWideTest, IsTorchvisionsForTheSameDraws) {
  pil_policy_testing::PolicySamples samples;
  for (const std::vector<double>& fill :
       std::vector<std::vector<double>>{{}, {128.6}, {-1}, {10, 200, 300}}) {
    for (int64_t bins : {31, 5}) {
      for (const std::string interpolation : {"nearest", "bilinear", "bicubic"}) {
        samples.add(
            "trivial_augment_wide",
            {{"num_magnitude_bins", bins}, {"fill", fill}, {"interpolation", interpolation}},
            ops::PolicySpace::kTrivialAugmentWide, bins, fill, 600, one_step(bins));
      }
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 0; k < 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
}

TEST(TrivialAugmentWideTest, WithVersionV2IsTorchvisionV2sForTheSameDraws) {
  pil_policy_testing::V2PolicySamples samples;
  for (const std::vector<double>& fill :
       std::vector<std::vector<double>>{{}, {128.6}, {-1}, {10, 200, 300}}) {
    for (int64_t bins : {31, 5}) {
      for (const std::string interpolation : {"nearest", "bilinear", "bicubic"}) {
        samples.add(
            "trivial_augment_wide", "TrivialAugmentWide",
            {{"num_magnitude_bins", bins}, {"fill", fill}, {"interpolation", interpolation}}, 300,
            v2_one_step(bins));
      }
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 0; k < 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
}

// backend=tensor: torchvision's _apply_op on the image's uint8 tensor (v1) and v2's own class
// on it, run with the same draws: grid_sample geometry (NEAREST, BILINEAR), torch's blends.
TEST(TrivialAugmentWideTest, WithBackendTensorIsTorchvisionsOnATensor) {
  pil_policy_testing::PolicySamples samples;
  pil_policy_testing::V2PolicySamples v2;
  for (const std::vector<double>& fill :
       std::vector<std::vector<double>>{{}, {128.6}, {10, 200, 250}}) {
    for (int64_t bins : {31, 5}) {
      for (const std::string interpolation : {"nearest", "bilinear"}) {
        const std::vector<std::pair<std::string, ParamValue>> given = {
            {"num_magnitude_bins", bins},
            {"fill", fill},
            {"interpolation", interpolation},
            {"backend", std::string("tensor")}};
        samples.add("trivial_augment_wide", given, ops::PolicySpace::kTrivialAugmentWide, bins,
                    fill, 400, one_step(bins));
        v2.add("trivial_augment_wide", "TrivialAugmentWide", given, 200, v2_one_step(bins));
      }
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 0; k < 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
  v2.expect_torchvision(every);
}

// Bicubic has no tensor kernel here (v1's tensor affine refuses it), nor a fill past 255.
TEST(TrivialAugmentWideTest, BackendTensorRefusesBicubicAndFillsPast255) {
  const auto made = [](const std::vector<std::pair<std::string, ParamValue>>& given) {
    const OpCall call = make_op_call("trivial_augment_wide", given).value();
    return call.op->make_pixel(call.params, {"image", {3, 8, 8}}).status();
  };
  const Status bicubic =
      made({{"interpolation", std::string("bicubic")}, {"backend", std::string("tensor")}});
  EXPECT_EQ(bicubic.message(),
            "field 'image': trivial_augment_wide: backend=tensor samples nearest or bilinear "
            "(grid_sample), not bicubic");
  const Status fill =
      made({{"fill", std::vector<double>{300}}, {"backend", std::string("tensor")}});
  EXPECT_EQ(fill.message(),
            "field 'image': trivial_augment_wide: backend=tensor fills from 0 to 255, not 300");
}

TEST(TrivialAugmentWideTest, DrawsEachOpBinAndSignUniformly) {
  std::vector<int> ops(14, 0), bins(31, 0);
  int negative = 0;
  const int n = 14000;
  for (int i = 0; i < n; ++i) {
    CounterRng rng = pil_reference::op_sample(i).rng();
    const ops::PolicyStepDraw step = ops::draw_trivial_augment_wide(rng, 31);
    ++ops[static_cast<int>(step.op)];
    ++bins[step.bin];
    negative += step.negative;
  }
  for (int count : ops) EXPECT_NEAR(count, n / 14, 150);
  for (int count : bins) EXPECT_NEAR(count, n / 31, 100);
  EXPECT_NEAR(negative, n / 2, 250);
}

TEST(TrivialAugmentWideTest, RefusesBadParameters) {
  EXPECT_EQ(
      pil_reference::call_error("trivial_augment_wide", {{"num_magnitude_bins", int64_t{1}}}),
      "trivial_augment_wide: num_magnitude_bins must be a whole number in [2, 1000000], not 1");
  EXPECT_EQ(pil_reference::call_error("trivial_augment_wide", {{"interpolation", "lanczos"}}),
            "trivial_augment_wide: interpolation must be one of nearest, bilinear, bicubic, not "
            "'lanczos'");
  const OpCall call =
      make_op_call("trivial_augment_wide", {{"fill", std::vector<double>{1, 2}}}).value();
  const auto made = call.op->make_pixel(call.params, {"image", {3, 8, 8}});
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().message(),
            "field 'image': trivial_augment_wide: fill has 2 numbers; give one or one per "
            "channel (3)");
  EXPECT_FALSE(call.op->make_pixel(call.params, {"image", {1, 8, 8}}).is_ok());
  const OpCall one =
      make_op_call("trivial_augment_wide", {{"fill", std::vector<double>{1}}}).value();
  EXPECT_TRUE(one.op->make_pixel(one.params, {"image", {1, 8, 8}}).is_ok());
  EXPECT_TRUE(one.op->make_pixel(one.params, {"image", {3, 8, 8}}).is_ok());
}

}  // namespace
}  // namespace stoker
