// normal_draw: standard_normals' pairs are Box-Muller's two values of one radius and angle, in
// the documented order, and what it draws is N(0, 1) with consecutive values uncorrelated.
#include "stoker/pipeline/ops/normal_draw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace stoker {
namespace {

TEST(NormalDrawTest, PairsShareOneRadiusAndAngleAndAnOddLastIsOneValue) {
  CounterRng rng(7, 3);
  CounterRng copy = rng;
  std::vector<float> out(5);
  ops::standard_normals(rng, out.data(), out.size());
  for (size_t pair = 0; pair < 2; ++pair) {
    const double r = std::sqrt(-2.0 * std::log(1.0 - copy.next_double()));
    const double angle = 6.283185307179586 * copy.next_double();
    EXPECT_EQ(out[2 * pair], static_cast<float>(r * std::cos(angle))) << pair;
    EXPECT_EQ(out[2 * pair + 1], static_cast<float>(r * std::sin(angle))) << pair;
  }
  EXPECT_EQ(out[4], static_cast<float>(ops::standard_normal(copy)));
  EXPECT_EQ(rng.counter(), copy.counter());
}

TEST(NormalDrawTest, ValuesAreStandardNormalAndConsecutiveOnesUncorrelated) {
  CounterRng rng(11, 0);
  std::vector<float> values(200001);
  ops::standard_normals(rng, values.data(), values.size());
  double sum = 0, squares = 0, lagged = 0, beyond_two = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    sum += values[i];
    squares += values[i] * values[i];
    if (i > 0) lagged += values[i] * values[i - 1];
    if (std::fabs(values[i]) > 2) ++beyond_two;
  }
  const double n = static_cast<double>(values.size());
  EXPECT_NEAR(sum / n, 0, 0.01);
  EXPECT_NEAR(squares / n, 1, 0.01);
  EXPECT_NEAR(lagged / (n - 1), 0, 0.01);  // a pair's cos and sin: independent
  EXPECT_NEAR(beyond_two / n, 0.0455, 0.002);
}

}  // namespace
}  // namespace stoker
