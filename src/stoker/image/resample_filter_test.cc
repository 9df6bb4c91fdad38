#include "stoker/image/resample_filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "stoker/image/crop_sampler.h"

namespace stoker::image {
namespace {

// Output i's non-zero weights by source index.
std::map<int, int32_t> weights_of(const AxisTaps& taps, int i) {
  std::map<int, int32_t> out;
  for (int t = 0; t < taps.count[i]; ++t) {
    const int32_t w = taps.weights[static_cast<size_t>(i) * taps.stride + t];
    if (w != 0) out[taps.first[i] + t] = w;
  }
  return out;
}

TEST(ResampleFilterTest, WeightsSumToOneInFixedPointAndCoverTheBox) {
  for (auto [in, out] : {std::pair{1, 224},
                         {500, 224},
                         {1200, 224},
                         {100, 224},
                         {224, 224},
                         {7, 3},
                         {3, 7},
                         {1000, 1}}) {
    AxisTaps taps;
    compute_axis_taps(in, 0, in, out, 0, out, ResampleFilter::kBilinear, taps);
    ASSERT_EQ(taps.first.size(), static_cast<size_t>(out));
    for (int i = 0; i < out; ++i) {
      ASSERT_GE(taps.first[i], 0);
      ASSERT_LE(taps.first[i] + taps.count[i], in);
      ASSERT_LE(taps.count[i], taps.stride);
      const auto* w = &taps.weights[static_cast<size_t>(i) * taps.stride];
      const int64_t sum = std::accumulate(w, w + taps.stride, int64_t{0});
      // Each weight is rounded by at most half a unit.
      EXPECT_NEAR(sum, 1 << kPrecisionBits, taps.count[i] / 2 + 1) << in << "->" << out;
    }
  }
  AxisTaps same;
  compute_axis_taps(50, 0, 50, 50, 0, 50, ResampleFilter::kBilinear,
                    same);  // scale 1: each output is its source pixel
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(weights_of(same, i), (std::map<int, int32_t>{{i, 1 << 22}}));
}

// Resize + CenterCrop as one box: the crop's pre-image in the source gives the same taps as
// resizing the whole axis and keeping the crop's outputs, for every size tried.
TEST(ResampleFilterTest, CenterCropBoxHasTheTapsOfResizeThenCrop) {
  int compared = 0;
  for (int size = 1; size <= 2400; size += (size < 300 ? 1 : 7)) {
    for (auto [resize, crop] : {std::pair{256, 224}, {73, 61}, {232, 224}, {160, 128}}) {
      // The axis is the longer one (of a size x resize image), or the shorter.
      for (int other : {resize, 100000}) {
        auto c = resize_center_crop(size, other, resize, crop, std::min(crop, resize));
        if (!c.is_ok()) continue;
        AxisTaps whole, box;
        const int resized = c.value().resized_width;
        compute_axis_taps(size, 0, size, resized, 0, resized, ResampleFilter::kBilinear, whole);
        compute_axis_taps(size, c.value().box.x0, c.value().box.x1, crop, 0, crop,
                          ResampleFilter::kBilinear, box);
        const int left = static_cast<int>(round_half_even((c.value().resized_width - crop) / 2.0));
        for (int i = 0; i < crop; ++i)
          ASSERT_EQ(weights_of(box, i), weights_of(whole, left + i))
              << size << " resized to " << c.value().resized_width << ", crop " << crop
              << ", output " << i;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

// The taps of outputs [begin, end) are the whole axis's outputs begin.. (a resize's window),
// for both filters, downscaling and upscaling, windows at either edge and inside.
TEST(ResampleFilterTest, AWindowsTapsAreTheWholeAxissTaps) {
  for (auto filter : {ResampleFilter::kBilinear, ResampleFilter::kBicubic}) {
    for (auto [in, out] : {std::pair{500, 224}, {224, 700}, {37, 36}, {5, 1040}}) {
      AxisTaps whole, window;
      compute_axis_taps(in, 0, in, out, 0, out, filter, whole);
      for (auto [begin, end] : {std::pair{0, 1},
                                {0, out / 2},
                                {out / 3, out},
                                {out - 1, out},
                                {out / 4, out / 4 + 1 + out / 3}}) {
        compute_axis_taps(in, 0, in, out, begin, end, filter, window);
        ASSERT_EQ(window.first.size(), static_cast<size_t>(end - begin));
        for (int i = begin; i < end; ++i)
          ASSERT_EQ(weights_of(window, i - begin), weights_of(whole, i))
              << in << " -> " << out << ", window " << begin << ".." << end << ", output " << i;
      }
    }
  }
}

// torch's precision: 100 -> 50 bilinear has scale 2, so support 2; output 0 (center 1) reads
// sources 0..2 at distances 0.25, 0.25, 0.75 of the filter's width: 0.75, 0.75, 0.25,
// normalised 3/7, 3/7, 1/7; inside, 1/4 1/2 1/4 (and 1/8 3/8 3/8 1/8 nowhere larger), so the
// largest weight is 3/7: 3/7 * 2^17 = 56174 passes 2^15, 3/7 * 2^16 = 28087 does not: 16 bits.
// Upscaling 10 -> 20, output 0 reads source 0 alone (its neighbour is clipped): a weight of 1,
// 2^14 fits, 2^15 does not: 14. Upscaling bicubic, output 0 of 4 -> 16 has a clipped negative
// lobe, renormalised above 1 (1.11): still 14.
TEST(ResampleFilterTest, TorchPrecisionKeepsTheLargestWeightInInt16) {
  EXPECT_EQ(torch_precision_bits(100, 50, ResampleFilter::kBilinear), 16);
  EXPECT_EQ(torch_precision_bits(10, 20, ResampleFilter::kBilinear), 14);
  EXPECT_EQ(torch_precision_bits(1, 1, ResampleFilter::kBilinear), 14);
  EXPECT_EQ(torch_precision_bits(4, 16, ResampleFilter::kBicubic), 14);
  // Downscaling a lot spreads the weights: at most 22 bits, PIL's.
  EXPECT_EQ(torch_precision_bits(100000, 3, ResampleFilter::kBilinear), kPrecisionBits);
  for (auto filter : {ResampleFilter::kBilinear, ResampleFilter::kBicubic}) {
    for (auto [in, out] : {std::pair{500, 224}, {224, 700}, {37, 36}, {5, 1040}, {333, 17}}) {
      const int bits = torch_precision_bits(in, out, filter);
      AxisTaps taps;
      compute_axis_taps(in, 0, in, out, 0, out, filter, taps, bits);
      EXPECT_EQ(taps.precision, bits);
      const int32_t largest = *std::max_element(taps.weights.begin(), taps.weights.end());
      // In int16, and with one more bit it would not be.
      EXPECT_LT(largest, 1 << 15) << in << " -> " << out;
      if (bits < kPrecisionBits) {
        EXPECT_GE(2 * largest + 1, 1 << 15) << in << " -> " << out;
      }
      for (int i = 0; i < out; ++i) {
        const auto* w = &taps.weights[static_cast<size_t>(i) * taps.stride];
        EXPECT_NEAR(std::accumulate(w, w + taps.stride, int64_t{0}), 1 << bits,
                    taps.count[i] / 2 + 1);
      }
    }
  }
}

}  // namespace
}  // namespace stoker::image
