// ChannelStatistics: exact against a direct two-pass computation, the same for planes and
// interleaved rows, and merging parts in any order equals one pass.
#include "stoker/store/channel_statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace stoker {
namespace {

// Mean and population std of channel `c` of CHW `images` (each channels x plane bytes), two
// passes in long double, in [0, 1] units.
std::pair<double, double> direct(const std::vector<std::vector<uint8_t>>& images, int channels,
                                 int c) {
  long double sum = 0, n = 0;
  for (const auto& image : images) {
    const size_t plane = image.size() / channels;
    for (size_t i = 0; i < plane; ++i) sum += image[c * plane + i];
    n += plane;
  }
  const long double mean = sum / n;
  long double squares = 0;
  for (const auto& image : images) {
    const size_t plane = image.size() / channels;
    for (size_t i = 0; i < plane; ++i) {
      const long double d = image[c * plane + i] - mean;
      squares += d * d;
    }
  }
  return {static_cast<double>(mean / 255), static_cast<double>(std::sqrt(squares / n) / 255)};
}

std::vector<uint8_t> random_image(std::mt19937_64& rng, size_t bytes, int lo, int hi) {
  std::uniform_int_distribution<int> value(lo, hi);
  std::vector<uint8_t> image(bytes);
  for (uint8_t& x : image) x = static_cast<uint8_t>(value(rng));
  return image;
}

// `planes` (CHW, channels planes of width x height) as interleaved rows of `stride` bytes.
std::vector<uint8_t> interleave(const std::vector<uint8_t>& planes, int channels, size_t width,
                                size_t height, size_t stride) {
  std::vector<uint8_t> rows(stride * height, 0xAB);  // padding that must not be counted
  const size_t plane = width * height;
  for (size_t y = 0; y < height; ++y) {
    for (size_t x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c)
        rows[y * stride + x * channels + c] = planes[c * plane + y * width + x];
    }
  }
  return rows;
}

void expect_near_relative(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-13 * std::max(1.0, std::abs(expected)));
}

TEST(ChannelStatisticsTest, PlanesGiveTheDirectMeanAndStdOfEveryChannel) {
  std::mt19937_64 rng(1);
  // 1-4 channels take the block kernel, 5 and more the pixel loop; plane sizes that are not a
  // multiple of the 16-pixel block.
  for (int channels : {1, 2, 3, 4, 5, 7}) {
    for (size_t plane : {size_t{1}, size_t{15}, size_t{784}, size_t{1000}}) {
      std::vector<std::vector<uint8_t>> images;
      ChannelStatistics stats(channels);
      for (int i = 0; i < 5; ++i) {
        images.push_back(random_image(rng, channels * plane, 0, 255));
        stats.add_planes(images.back().data(), plane);
      }
      const FieldStatistics s = stats.summary();
      ASSERT_EQ(s.pixels, 5 * plane);
      ASSERT_EQ(s.mean.size(), static_cast<size_t>(channels));
      ASSERT_EQ(s.std.size(), static_cast<size_t>(channels));
      for (int c = 0; c < channels; ++c) {
        const auto [mean, std] = direct(images, channels, c);
        SCOPED_TRACE(::testing::Message()
                     << channels << " channels, plane " << plane << ", c " << c);
        expect_near_relative(s.mean[c], mean);
        expect_near_relative(s.std[c], std);
      }
    }
  }
  // Bright pixels over more blocks than the kernel's 32-bit lanes hold before it flushes them.
  const size_t big = (size_t{1} << 21) + 37;
  std::vector<std::vector<uint8_t>> images = {random_image(rng, big, 200, 255)};
  ChannelStatistics stats(1);
  stats.add_planes(images[0].data(), big);
  const auto [mean, std] = direct(images, 1, 0);
  expect_near_relative(stats.summary().mean[0], mean);
  expect_near_relative(stats.summary().std[0], std);
}

TEST(ChannelStatisticsTest, InterleavedRowsCountTheSamePixelsAsPlanes) {
  std::mt19937_64 rng(2);
  for (int channels : {1, 3, 4, 5}) {
    for (auto [width, height] : {std::pair<size_t, size_t>{1, 1}, {17, 3}, {40, 33}}) {
      const std::vector<uint8_t> planes = random_image(rng, channels * width * height, 0, 255);
      const size_t stride = width * channels + 5;
      const std::vector<uint8_t> rows = interleave(planes, channels, width, height, stride);
      ChannelStatistics from_planes(channels), from_rows(channels);
      from_planes.add_planes(planes.data(), width * height);
      from_rows.add_interleaved(rows.data(), width, height, stride);
      EXPECT_EQ(from_rows, from_planes) << channels << " channels, " << width << "x" << height;
      EXPECT_EQ(from_rows.pixels(), width * height);
    }
  }
}

TEST(ChannelStatisticsTest, MergingPartsInAnyOrderEqualsOnePass) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    const int channels = 1 + static_cast<int>(rng() % 5);
    const size_t count = 1 + rng() % 20;
    std::vector<std::vector<uint8_t>> images;
    std::vector<size_t> planes;
    ChannelStatistics whole(channels);
    for (size_t i = 0; i < count; ++i) {
      planes.push_back(1 + rng() % 100);
      images.push_back(random_image(rng, channels * planes.back(), 0, 255));
      whole.add_planes(images.back().data(), planes.back());
    }
    // Each image to one of `parts` accumulators, merged in a random order.
    const size_t parts = 1 + rng() % 4;
    std::vector<ChannelStatistics> partial(parts, ChannelStatistics(channels));
    for (size_t i = 0; i < count; ++i)
      partial[rng() % parts].add_planes(images[i].data(), planes[i]);
    std::shuffle(partial.begin(), partial.end(), rng);
    ChannelStatistics merged(channels);
    for (const ChannelStatistics& p : partial) ASSERT_TRUE(merged.merge(p).is_ok());
    EXPECT_EQ(merged, whole) << "trial " << trial;
    EXPECT_EQ(merged.summary().mean, whole.summary().mean);
    EXPECT_EQ(merged.summary().std, whole.summary().std);
  }
}

TEST(ChannelStatisticsTest, MergingAnotherChannelCountIsRefused) {
  ChannelStatistics rgb(3), gray(1);
  const uint8_t pixel = 7;
  gray.add_planes(&pixel, 1);
  const Status s = rgb.merge(gray);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1 channels"), std::string::npos) << s.message();
  EXPECT_EQ(rgb.pixels(), 0u);
}

TEST(ChannelStatisticsTest, ExtremesAndNoPixels) {
  const FieldStatistics none = ChannelStatistics(2).summary();
  EXPECT_EQ(none.pixels, 0u);
  EXPECT_TRUE(none.mean.empty() && none.std.empty());

  const std::vector<uint8_t> black_white = {0, 255, 0, 255, 255, 255, 255, 255};
  ChannelStatistics two(2);
  two.add_planes(black_white.data(), 4);
  EXPECT_EQ(two.summary().mean, (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(two.summary().std, (std::vector<double>{0.5, 0.0}));
}

// Almost constant data over many pixels: E[x^2] - E[x]^2 in double would lose most digits
// (40000 minus 40000 for a difference near 1e-6); the integer decomposition keeps them.
TEST(ChannelStatisticsTest, ANearlyConstantChannelKeepsItsSmallStd) {
  const size_t n = size_t{1} << 22;
  std::vector<uint8_t> plane(n, 200);
  plane[12345] = 201;
  ChannelStatistics stats(1);
  stats.add_planes(plane.data(), n);
  const long double p = 1.0L / n;  // the fraction of 201s: mean 200 + p, variance p (1 - p)
  const FieldStatistics s = stats.summary();
  expect_near_relative(s.mean[0], static_cast<double>((200 + p) / 255));
  EXPECT_NEAR(s.std[0] / static_cast<double>(std::sqrt(p * (1 - p)) / 255), 1.0, 1e-14);
}

TEST(ChannelStatisticsTest, ChannelsOfAField) {
  EXPECT_EQ(statistics_channels({"i", DType::kUint8, {3, 32, 32}}), 3);
  EXPECT_EQ(statistics_channels({"i", DType::kUint8, {28, 28}}), 1);
  EXPECT_EQ(statistics_channels({"i", DType::kUint8, {kMaxStatisticsChannels, 2, 2}}),
            kMaxStatisticsChannels);
  EXPECT_EQ(statistics_channels({"i", DType::kBytes, {}}), 3);
  EXPECT_EQ(statistics_channels({"i", DType::kUint8, {kMaxStatisticsChannels + 1, 2, 2}}), 0);
  EXPECT_EQ(statistics_channels({"i", DType::kUint8, {784}}), 0);
  EXPECT_EQ(statistics_channels({"i", DType::kUint8, {1, 2, 2, 2}}), 0);
  EXPECT_EQ(statistics_channels({"i", DType::kFloat32, {3, 2, 2}}), 0);
  EXPECT_EQ(statistics_channels({"i", DType::kInt64, {}}), 0);
}

}  // namespace
}  // namespace stoker
