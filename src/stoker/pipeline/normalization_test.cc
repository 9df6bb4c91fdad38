#include "stoker/pipeline/normalization.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace stoker {
namespace {

// The formula, per channel, for samples of shape [3,5,7] (35 values a channel, so the
// vectorised body and its scalar tail both run).
TEST(NormalizationTest, NormalisesEveryValuePerChannel) {
  const std::vector<float> mean = {0.1f, 0.2f, 0.3f}, std = {0.3f, 0.2f, 0.1f};
  const Normalization n = Normalization::create({3, 5, 7}, mean, std).value_or_throw();
  EXPECT_EQ(n.run_elements(), 35);
  std::vector<uint8_t> src(2 * 105);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37 + 11);
  std::vector<float> out(src.size());
  n.apply(src.data(), out.data(), 2);
  for (size_t i = 0; i < src.size(); ++i) {
    const size_t c = i % 105 / 35;
    EXPECT_EQ(out[i], (src[i] / 255.0f - mean[c]) / std[c]) << i;  // torchvision's roundings
  }
}

// Channels are dim 0 of a [C,H,W] sample only: a [H,W] image is one channel, so 5 means for
// [5,7] are an error, and one mean and std make one run over the whole sample.
TEST(NormalizationTest, OnlyCHWSamplesHaveSeveralChannels) {
  EXPECT_FALSE(
      Normalization::create({5, 7}, std::vector<float>(5, 0.1f), std::vector<float>(5, 0.2f))
          .is_ok());
  const Normalization flat = Normalization::create({5, 7}, {0.1f}, {0.2f}).value_or_throw();
  EXPECT_EQ(flat.run_elements(), 35);
  EXPECT_EQ(flat.mean().size(), 1u);
  const Normalization rgb = Normalization::create({3, 2, 2}, {0.1f}, {0.2f}).value_or_throw();
  EXPECT_EQ(rgb.run_elements(), 12);  // one run for 3 channels
}

// Property: n samples in one call equal n calls of one sample, for one run per sample and one
// run per channel.
TEST(NormalizationTest, ManySamplesEqualOneAtATime) {
  std::mt19937 rng(3);
  for (const auto& [mean, std] : std::vector<std::pair<std::vector<float>, std::vector<float>>>{
           {{0.3f}, {0.2f}}, {{0.1f, 0.2f, 0.3f}, {0.3f, 0.2f, 0.1f}}}) {
    const Normalization n = Normalization::create({3, 5, 7}, mean, std).value_or_throw();
    for (size_t count : {1u, 2u, 9u}) {
      std::vector<uint8_t> src(count * 105);
      for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
      std::vector<float> together(src.size()), apart(src.size());
      n.apply(src.data(), together.data(), count);
      for (size_t k = 0; k < count; ++k) n.apply(&src[k * 105], &apart[k * 105], 1);
      EXPECT_EQ(together, apart) << count;
    }
  }
}

TEST(NormalizationTest, RejectsImpossibleStatistics) {
  EXPECT_FALSE(Normalization::create({3, 2, 2}, {0.f, 0.f}, {1.f, 1.f}).is_ok());
  EXPECT_FALSE(Normalization::create({3, 2, 2}, {0.f}, {0.f}).is_ok());
  EXPECT_FALSE(Normalization::create({3, 2, 2}, {0.f}, {1.f, 1.f}).is_ok());
  EXPECT_FALSE(Normalization::create({4}, {NAN}, {1.f}).is_ok());
  EXPECT_FALSE(Normalization::create({4}, {0.f}, {INFINITY}).is_ok());
}

}  // namespace
}  // namespace stoker
