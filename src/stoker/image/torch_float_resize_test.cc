#include "stoker/image/torch_float_resize.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

// Its pixels against torch's own: python/tests/test_tensor_resize.py. Here, what holds for any
// build: sizes kept are copies, a flat image stays flat, a window is the whole resize's part,
// the two orders of sums differ only beyond 5 taps, and bad requests are refused.

namespace stoker::image {
namespace {

std::vector<uint8_t> noise(int width, int height, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3);
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng() & 0xff);
  return pixels;
}

RgbView view_of(const std::vector<uint8_t>& pixels, int width, int height) {
  return {pixels.data(), width, height, static_cast<ptrdiff_t>(width) * 3};
}

TEST(TorchFloatResizeTest, TheSameSizeIsACopyAndAFlatImageStaysFlat) {
  const std::vector<uint8_t> pixels = noise(23, 17, 1);
  std::vector<float> values;
  std::vector<uint8_t> out;
  for (auto filter : {ResampleFilter::kBilinear, ResampleFilter::kBicubic}) {
    ASSERT_TRUE(
        torch_float_resize(view_of(pixels, 23, 17), 0, 0, 23, 17, 23, 17, {}, filter, values)
            .is_ok());
    EXPECT_EQ(values, std::vector<float>(pixels.begin(), pixels.end()));
    const std::vector<uint8_t> flat(40 * 31 * 3, 201);
    for (auto [w, h] : {std::pair{13, 9}, {90, 70}, {3, 100}}) {
      ASSERT_TRUE(torch_float_resize(view_of(flat, 40, 31), 0, 0, 40, 31, w, h, {}, filter, values)
                      .is_ok());
      round_to_uint8(values, filter, out);
      EXPECT_EQ(out, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3, 201)) << w << "x" << h;
    }
  }
}

// The two orders of sums are the same up to 5 taps (the unrolled one's first 1 + 4 floor((n - 1)
// / 4) rounded products are the first alone) and apart beyond (each torch's, test_tensor_
// resize.py): an upscale and a 2x bilinear downscale (4 taps) agree, a 4x one (8 taps) not.
TEST(TorchFloatResizeTest, FusedSumsAreTheUnrolledOnesUpToFiveTapsOnly) {
  const std::vector<uint8_t> pixels = noise(64, 48, 4);
  std::vector<float> unrolled, fused;
  const auto both = [&](int w, int h) {
    for (auto [sums, out] : {std::pair{TorchFloatSums::kUnrolled, &unrolled},
                             std::pair{TorchFloatSums::kFused, &fused}})
      ASSERT_TRUE(torch_float_resize(view_of(pixels, 64, 48), 0, 0, 64, 48, w, h, {},
                                     ResampleFilter::kBilinear, *out, sums)
                      .is_ok());
  };
  both(100, 70);
  EXPECT_EQ(unrolled, fused);
  both(32, 24);
  EXPECT_EQ(unrolled, fused);
  both(16, 12);
  EXPECT_NE(unrolled, fused);
}

TEST(TorchFloatResizeTest, RoundsAsTorchvisionReturnsAFloatResizeToUint8) {
  std::vector<uint8_t> out;
  round_to_uint8({0.5f, 1.5f, 2.5f, -0.3f, 254.5f, 255.4f, 300.0f, -7.0f}, ResampleFilter::kBicubic,
                 out);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 2, 2, 0, 254, 255, 255, 0}));
}

TEST(TorchFloatResizeTest, AWindowIsThePartOfTheWholeResizeFromTheRowsItReads) {
  const std::vector<uint8_t> pixels = noise(97, 64, 2);
  for (auto filter : {ResampleFilter::kBilinear, ResampleFilter::kBicubic}) {
    std::vector<float> whole, part;
    ASSERT_TRUE(torch_float_resize(view_of(pixels, 97, 64), 0, 0, 97, 64, 45, 30, {}, filter, whole)
                    .is_ok());
    const ResampleWindow window{7, 4, 30, 22};
    // The source from (2, 1) on: a decode that left out pixels the window does not read.
    const RgbView shifted{pixels.data() + (1 * 97 + 2) * 3, 95, 63, 97 * 3};
    ASSERT_TRUE(torch_float_resize(shifted, 2, 1, 97, 64, 45, 30, window, filter, part).is_ok());
    for (int y = 0; y < window.height; ++y)
      for (int x = 0; x < window.width * 3; ++x)
        ASSERT_EQ(part[static_cast<size_t>(y) * window.width * 3 + x],
                  whole[static_cast<size_t>(y + window.y) * 45 * 3 + window.x * 3 + x])
            << y << ", " << x;
  }
}

TEST(TorchFloatResizeTest, BadRequestsAreRefusedWithNothingWritten) {
  const std::vector<uint8_t> pixels = noise(20, 20, 3);
  std::vector<float> out = {9};
  const auto refused = [&](const RgbView& src, int x, int y, int out_w, int out_h,
                           ResampleWindow window) {
    return torch_float_resize(src, x, y, 20, 20, out_w, out_h, window, ResampleFilter::kBilinear,
                              out)
        .code();
  };
  EXPECT_EQ(refused(view_of(pixels, 20, 20), 0, 0, 0, 5, {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused(view_of(pixels, 20, 20), 0, 0, 10, 10, {5, 5, 6, 2}),
            StatusCode::kInvalidArgument);
  // A source from (3, 0) on lacks the columns the first outputs read.
  EXPECT_EQ(refused(RgbView{pixels.data() + 9, 17, 20, 60}, 3, 0, 10, 10, {}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(out, std::vector<float>{9});
}

}  // namespace
}  // namespace stoker::image
