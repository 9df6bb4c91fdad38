// choose_normalization: the values given, else the data's statistics, else a default with a
// warning.
#include "stoker/train/normalization_choice.h"

#include <gtest/gtest.h>

#include "stoker/pipeline/image_transforms.h"

namespace stoker {
namespace {

Manifest with_statistics(std::vector<double> mean, std::vector<double> std) {
  Manifest m;
  m.statistics["image"] = {std::move(mean), std::move(std), 1000};
  return m;
}

TEST(NormalizationChoiceTest, TheDatasStatisticsUnlessGiven) {
  const Manifest m = with_statistics({0.25, 0.5, 0.75}, {0.125, 0.2, 0.3});
  const NormalizationChoice c = choose_normalization(m, "/d/train", true, {}, {});
  EXPECT_EQ(c.mean, (std::vector<float>{0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(c.std, (std::vector<float>{0.125f, 0.2f, 0.3f}));
  EXPECT_EQ(c.mean_from, NormalizationSource::kData);
  EXPECT_EQ(c.std_from, NormalizationSource::kData);
  EXPECT_EQ(c.phrase,
            "mean 0.2500,0.5000,0.7500 std 0.1250,0.2000,0.3000 from the data's manifest");
  EXPECT_EQ(c.warning, "");

  const NormalizationChoice given = choose_normalization(m, "/d/train", true, {0.5f}, {0.25f});
  EXPECT_EQ(given.mean, std::vector<float>{0.5f});
  EXPECT_EQ(given.std, std::vector<float>{0.25f});
  EXPECT_EQ(given.mean_from, NormalizationSource::kOption);
  EXPECT_EQ(given.phrase, "mean 0.5000 std 0.2500 from --mean/--std");
  EXPECT_EQ(given.warning, "");

  const NormalizationChoice mixed = choose_normalization(m, "/d/train", true, {0.5f}, {});
  EXPECT_EQ(mixed.mean, std::vector<float>{0.5f});
  EXPECT_EQ(mixed.std, (std::vector<float>{0.125f, 0.2f, 0.3f}));
  EXPECT_EQ(mixed.phrase,
            "mean 0.5000 from --mean, std 0.1250,0.2000,0.3000 from the data's manifest");
}

TEST(NormalizationChoiceTest, DataWithoutStatisticsGetsTheDefaultAndAWarning) {
  const Manifest old;  // as an older stoker wrote it
  const NormalizationChoice pixels = choose_normalization(old, "/d/train", false, {}, {});
  EXPECT_EQ(pixels.mean, kFashionMnistMean);
  EXPECT_EQ(pixels.std, kFashionMnistStd);
  EXPECT_EQ(pixels.mean_from, NormalizationSource::kDefault);
  EXPECT_EQ(pixels.phrase, "mean 0.2860 std 0.3530 from Fashion-MNIST's defaults");
  EXPECT_EQ(pixels.warning,
            "warning: /d/train has no normalisation statistics in its manifest (converted by an "
            "older stoker, or its images are constant): normalising with Fashion-MNIST's "
            "mean/std; convert it again with this stoker to compute them, or pass --mean/--std");

  const NormalizationChoice images = choose_normalization(old, "/d/train", true, {}, {0.5f});
  EXPECT_EQ(images.mean, kImageNetMean);
  EXPECT_EQ(images.std, std::vector<float>{0.5f});
  EXPECT_EQ(images.phrase,
            "mean 0.4850,0.4560,0.4060 from ImageNet's defaults, std 0.5000 from --std");
  EXPECT_NE(images.warning.find("normalising with ImageNet's mean; "), std::string::npos)
      << images.warning;

  // Statistics of another field do not count.
  Manifest other;
  other.statistics["thumbnail"] = {{0.5}, {0.5}, 10};
  EXPECT_EQ(choose_normalization(other, "/d", false, {}, {}).mean_from,
            NormalizationSource::kDefault);
  EXPECT_EQ(choose_normalization(old, "/d", false, {0.5f}, {0.5f}).warning, "") << "all given";
}

TEST(NormalizationChoiceTest, SourcesHaveTheirRunLogWords) {
  EXPECT_STREQ(to_string(NormalizationSource::kOption), "option");
  EXPECT_STREQ(to_string(NormalizationSource::kData), "data");
  EXPECT_STREQ(to_string(NormalizationSource::kDefault), "default");
}

}  // namespace
}  // namespace stoker
