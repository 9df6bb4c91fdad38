#include "stoker/util/sample_stats.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace stoker {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 1.0);
  std::shuffle(v.begin(), v.end(), std::mt19937(n));
  return v;
}

TEST(SampleStatsTest, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({3.0}), 3.0);
  EXPECT_EQ(median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
}

// The ranks of published tables of the sign-test interval (e.g. Conover, Practical
// Nonparametric Statistics): n = 6 -> 1 and 6, 11 -> 2 and 10, 20 -> 6 and 15, 31 -> 10 and 22.
TEST(SampleStatsTest, IntervalRanksMatchTheBinomialTables) {
  EXPECT_EQ(median_interval_95(one_to(6)), std::make_pair(1.0, 6.0));
  EXPECT_EQ(median_interval_95(one_to(11)), std::make_pair(2.0, 10.0));
  EXPECT_EQ(median_interval_95(one_to(20)), std::make_pair(6.0, 15.0));
  EXPECT_EQ(median_interval_95(one_to(31)), std::make_pair(10.0, 22.0));
}

TEST(SampleStatsTest, CoverageIsExactFromTheBinomial) {
  EXPECT_DOUBLE_EQ(median_interval_coverage(5), 1 - 2.0 / 32);  // the whole range
  EXPECT_DOUBLE_EQ(median_interval_coverage(2), 0.5);
  EXPECT_NEAR(median_interval_coverage(11), 1 - 2 * 12.0 / 2048, 1e-12);  // ranks 2 and 10
  for (size_t n = 6; n <= 100; ++n) EXPECT_GE(median_interval_coverage(n), 0.95) << n;
}

TEST(SampleStatsTest, ManyValuesNeitherOverflowNorCollapse) {
  const auto [low, high] = median_interval_95(one_to(2000));
  EXPECT_GT(low, 900.0);
  EXPECT_LT(low, 1000.0);
  EXPECT_GT(high, 1000.0);
  EXPECT_LT(high, 1100.0);
}

TEST(SampleStatsTest, FewValuesGiveTheWholeRange) {
  EXPECT_EQ(median_interval_95({2.0}), std::make_pair(2.0, 2.0));
  EXPECT_EQ(median_interval_95({4.0, 1.0, 3.0}), std::make_pair(1.0, 4.0));
}

// Property: over many samples of a skewed distribution whose median is known, the interval
// holds the true median at least 95% of the time (it is conservative: ranks are whole).
TEST(SampleStatsTest, IntervalCoversTheTrueMedianAtLeastNinetyFivePercent) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> noise(1.0);
  const double true_median = std::log(2.0);
  for (int n : {6, 9, 15, 31}) {
    int covered = 0;
    constexpr int kTrials = 4000;
    for (int t = 0; t < kTrials; ++t) {
      std::vector<double> v(n);
      for (double& x : v) x = noise(rng);
      const auto [low, high] = median_interval_95(v);
      covered += low <= true_median && true_median <= high;
    }
    EXPECT_GE(covered, kTrials * 94 / 100) << "n = " << n;  // 95% less sampling error
  }
}

}  // namespace
}  // namespace stoker
