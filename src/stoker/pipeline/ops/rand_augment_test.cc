// rand_augment against torchvision's RandAugment on PIL images: each sample's draws
// (augment_policies.h) handed to torchvision's _apply_op in turn, with the magnitudes of its own
// _augmentation_space, pixel for pixel, over many samples; several num_ops, magnitudes and bins;
// fill none, one number, one per channel (on "RGB" images); NEAREST, BILINEAR and BICUBIC. With
// version=v2, torchvision v2's RandAugment itself run with the same draws (pil_policy_v2.h).
#include "stoker/testing/pil_policy.h"
#include "stoker/testing/pil_policy_v2.h"

namespace stoker {
namespace {

TEST(RandAugmentTest, IsTorchvisionsForTheSameDraws) {
  pil_policy_testing::PolicySamples samples;
  struct Config {
    int64_t num_ops, magnitude, bins;
  };
  for (const Config& c : {Config{2, 9, 31}, Config{3, 30, 31}, Config{1, 0, 31}, Config{2, 4, 5},
                          Config{4, 17, 31}}) {
    for (const std::vector<double>& fill :
         std::vector<std::vector<double>>{{}, {128.6}, {10, 200, 300}}) {
      for (const std::string interpolation : {"nearest", "bilinear", "bicubic"}) {
        samples.add("rand_augment",
                    {{"num_ops", c.num_ops},
                     {"magnitude", c.magnitude},
                     {"num_magnitude_bins", c.bins},
                     {"fill", fill},
                     {"interpolation", interpolation}},
                    ops::PolicySpace::kRandAugment, c.bins, fill, 200, [c](CounterRng& rng) {
                      return ops::draw_rand_augment(rng, c.num_ops, c.magnitude);
                    });
      }
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 0; k < 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
}

TEST(RandAugmentTest, WithVersionV2IsTorchvisionV2sForTheSameDraws) {
  pil_policy_testing::V2PolicySamples samples;
  struct Config {
    int64_t num_ops, magnitude, bins;
  };
  for (const Config& c : {Config{2, 9, 31}, Config{3, 30, 31}, Config{1, 0, 31}, Config{2, 4, 5},
                          Config{4, 17, 31}, Config{2, 2, 31}}) {
    for (const std::vector<double>& fill :
         std::vector<std::vector<double>>{{}, {128.6}, {10, 200, 300}}) {
      for (const std::string interpolation : {"nearest", "bilinear", "bicubic"}) {
        samples.add("rand_augment", "RandAugment",
                    {{"num_ops", c.num_ops},
                     {"magnitude", c.magnitude},
                     {"num_magnitude_bins", c.bins},
                     {"fill", fill},
                     {"interpolation", interpolation}},
                    100, [c](CounterRng& rng) {
                      const std::vector<ops::PolicyStepDraw> steps =
                          ops::draw_rand_augment(rng, c.num_ops, c.magnitude);
                      pil_policy_testing::V2PolicySamples::Draws drawn{
                          {{"steps", pil_policy_testing::v2_policy_steps(steps)}}, {}};
                      for (const ops::PolicyStepDraw& step : steps)
                        drawn.applied.push_back(step.op);
                      return drawn;
                    });
      }
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 0; k < 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
}

// backend=tensor, v1's _apply_op and v2's class on the image's uint8 tensor.
TEST(RandAugmentTest, WithBackendTensorIsTorchvisionsOnATensor) {
  pil_policy_testing::PolicySamples samples;
  pil_policy_testing::V2PolicySamples v2;
  for (const std::vector<double>& fill : std::vector<std::vector<double>>{{}, {10, 200, 250}}) {
    for (const std::string interpolation : {"nearest", "bilinear"}) {
      const std::vector<std::pair<std::string, ParamValue>> given = {
          {"num_ops", int64_t{2}},
          {"magnitude", int64_t{9}},
          {"fill", fill},
          {"interpolation", interpolation},
          {"backend", std::string("tensor")}};
      samples.add("rand_augment", given, ops::PolicySpace::kRandAugment, 31, fill, 300,
                  [](CounterRng& rng) { return ops::draw_rand_augment(rng, 2, 9); });
      v2.add("rand_augment", "RandAugment", given, 150, [](CounterRng& rng) {
        const std::vector<ops::PolicyStepDraw> steps = ops::draw_rand_augment(rng, 2, 9);
        pil_policy_testing::V2PolicySamples::Draws drawn{
            {{"steps", pil_policy_testing::v2_policy_steps(steps)}}, {}};
        for (const ops::PolicyStepDraw& step : steps) drawn.applied.push_back(step.op);
        return drawn;
      });
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 0; k < 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
  v2.expect_torchvision(every);
}

TEST(RandAugmentTest, NoOpsLeaveTheImage) {
  std::vector<uint8_t> pixels(3 * 9 * 7);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 29);
  const std::vector<uint8_t> before = pixels;
  ASSERT_TRUE(pil_reference::make_pixel_op("rand_augment", {{"num_ops", int64_t{0}}}, {3, 9, 7})
                  ->apply(pil_reference::op_sample(3), pixels.data())
                  .is_ok());
  EXPECT_EQ(pixels, before);
}

TEST(RandAugmentTest, RefusesAMagnitudePastTheBins) {
  const OpCall call = make_op_call("rand_augment", {{"magnitude", int64_t{31}},
                                                    {"num_magnitude_bins", int64_t{31}}})
                          .value();
  const auto made = call.op->make_pixel(call.params, {"image", {3, 8, 8}});
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().message(),
            "field 'image': rand_augment: magnitude 31 must be below num_magnitude_bins 31");
  EXPECT_EQ(pil_reference::call_error("rand_augment", {{"num_ops", int64_t{-1}}}),
            "rand_augment: num_ops must be a whole number in [0, 1000], not -1");
}

}  // namespace
}  // namespace stoker
