#include "stoker/pipeline/normalize_kernel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace stoker {
namespace {

using Kernel = void (*)(const uint8_t*, float*, int64_t, image::UnitScale, float, float);

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

// torchvision's value, computed in double and rounded once per operation (a double holds a
// float32 product or quotient's exact rounding input closely enough that rounding it to float32
// is the float32 operation's result, as for every +, -, *, / of two float32 values).
float reference(uint8_t v, image::UnitScale unit, float mean, float std) {
  const float x = unit == image::UnitScale::kDivide
                      ? static_cast<float>(static_cast<double>(v) / 255.0)
                      : static_cast<float>(static_cast<double>(v) * image::kInverse255);
  const float centred = static_cast<float>(static_cast<double>(x) - mean);
  return static_cast<float>(static_cast<double>(centred) / std);
}

// Every length from 0 to 100 (vector bodies and scalar tails) at every alignment of the input
// within 8 bytes, bit for bit against the operations rounded one by one; the output just past
// the end must stay untouched.
void expect_matches_torchvision(Kernel kernel, image::UnitScale unit) {
  std::mt19937 rng(5);
  std::vector<uint8_t> in(120);
  for (uint8_t& v : in) v = static_cast<uint8_t>(rng());
  const float mean = 0.286f, std = 0.353f;
  for (int64_t n = 0; n <= 100; ++n) {
    for (int64_t skew = 0; skew < 8; ++skew) {
      std::vector<float> out(n + 1, -42.0f);
      kernel(in.data() + skew, out.data(), n, unit, mean, std);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(bits(out[i]), bits(reference(in[skew + i], unit, mean, std)))
            << "n " << n << " i " << i;
      }
      ASSERT_EQ(out[n], -42.0f) << "wrote past the end, n " << n;
    }
  }
}

// The two unit scales differ for about half of the 256 values (so a kernel that used one for the
// other fails the test above), and mean 0, std 1 leave the unit value as is.
TEST(NormalizeKernelTest, TheUnitScalesDifferAndTheIdentityKeepsTheUnit) {
  std::vector<uint8_t> all(256);
  for (int v = 0; v < 256; ++v) all[v] = static_cast<uint8_t>(v);
  std::vector<float> divided(256), multiplied(256);
  normalize_u8(all.data(), divided.data(), 256, image::UnitScale::kDivide, 0.0f, 1.0f);
  normalize_u8(all.data(), multiplied.data(), 256, image::UnitScale::kMultiply, 0.0f, 1.0f);
  int differ = 0;
  for (int v = 0; v < 256; ++v) {
    EXPECT_EQ(divided[v], static_cast<float>(v) / 255.0f);
    EXPECT_EQ(multiplied[v], static_cast<float>(v) * image::kInverse255);
    differ += divided[v] != multiplied[v];
  }
  EXPECT_GT(differ, 64);
}

TEST(NormalizeKernelTest, BaselineIsTorchvisions) {
  expect_matches_torchvision(normalize_u8_baseline, image::UnitScale::kDivide);
  expect_matches_torchvision(normalize_u8_baseline, image::UnitScale::kMultiply);
}

TEST(NormalizeKernelTest, Avx2IsTorchvisions) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  expect_matches_torchvision(normalize_u8_avx2, image::UnitScale::kDivide);
  expect_matches_torchvision(normalize_u8_avx2, image::UnitScale::kMultiply);
}

TEST(NormalizeKernelTest, DispatchedKernelIsTorchvisions) {
  expect_matches_torchvision(normalize_u8, image::UnitScale::kDivide);
  expect_matches_torchvision(normalize_u8, image::UnitScale::kMultiply);
}

}  // namespace
}  // namespace stoker
