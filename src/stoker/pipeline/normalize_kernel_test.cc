#include "stoker/pipeline/normalize_kernel.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace stoker {
namespace {

using Kernel = void (*)(const uint8_t*, float*, int64_t, float, float);

// Every length from 0 to 100 (vector bodies and scalar tails) at every alignment of the input
// within 8 bytes, against the formula; the output just past the end must stay untouched.
void expect_matches_formula(Kernel kernel) {
  std::mt19937 rng(5);
  std::vector<uint8_t> in(120);
  for (uint8_t& v : in) v = static_cast<uint8_t>(rng());
  const float scale = 1.0f / (255.0f * 0.353f), bias = -0.286f / 0.353f;
  for (int64_t n = 0; n <= 100; ++n) {
    for (int64_t skew = 0; skew < 8; ++skew) {
      std::vector<float> out(n + 1, -42.0f);
      kernel(in.data() + skew, out.data(), n, scale, bias);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(out[i], in[skew + i] * scale + bias, 1e-5) << "n " << n << " i " << i;
      }
      ASSERT_EQ(out[n], -42.0f) << "wrote past the end, n " << n;
    }
  }
}

TEST(NormalizeKernelTest, BaselineMatchesTheFormula) {
  expect_matches_formula(normalize_u8_baseline);
}

TEST(NormalizeKernelTest, Avx2MatchesTheFormula) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  expect_matches_formula(normalize_u8_avx2);
}

TEST(NormalizeKernelTest, DispatchedKernelMatchesTheFormula) {
  expect_matches_formula(normalize_u8);
}

}  // namespace
}  // namespace stoker
