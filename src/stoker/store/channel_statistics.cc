#include "stoker/store/channel_statistics.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace stoker {
namespace {

using Sum = unsigned __int128;

// Pixels of up to 4 interleaved channels are summed in blocks of 16 pixels by a loop over the
// block's bytes with one 32-bit lane per byte, which the compiler vectorises; the lanes are
// folded into the channels' sums every kFlushBlocks blocks, before a square lane can overflow
// (65025 * 65536 < 2^32).
constexpr size_t kBlockPixels = 16;
constexpr size_t kFlushBlocks = 65536;
constexpr int kMaxBlockChannels = 4;

// Adds `pixels` pixels of `channels` interleaved bytes at `p` to sums[c] and squares[c], a
// pixel at a time.
void accumulate_pixels(const uint8_t* p, size_t pixels, int channels, Sum* sums, Sum* squares) {
  // 64-bit lanes hold the sums of 2^47 pixels, more than a row or plane has.
  uint64_t s[kMaxStatisticsChannels], q[kMaxStatisticsChannels];
  std::fill_n(s, channels, 0);
  std::fill_n(q, channels, 0);
  for (size_t i = 0; i < pixels; ++i, p += channels) {
    for (int c = 0; c < channels; ++c) {
      const uint64_t x = p[c];
      s[c] += x;
      q[c] += x * x;
    }
  }
  for (int c = 0; c < channels; ++c) {
    sums[c] += s[c];
    squares[c] += q[c];
  }
}

// The same for P <= kMaxBlockChannels channels, 16 pixels at a time.
template <int P>
void accumulate_blocks(const uint8_t* p, size_t pixels, Sum* sums, Sum* squares) {
  constexpr size_t kBlockBytes = kBlockPixels * P;
  size_t blocks = pixels / kBlockPixels;
  while (blocks > 0) {
    const size_t run = std::min(blocks, kFlushBlocks);
    uint32_t s[kBlockBytes] = {}, q[kBlockBytes] = {};
    for (size_t b = 0; b < run; ++b, p += kBlockBytes) {
      for (size_t j = 0; j < kBlockBytes; ++j) {
        const uint32_t x = p[j];
        s[j] += x;
        q[j] += x * x;
      }
    }
    for (size_t j = 0; j < kBlockBytes; ++j) {
      sums[j % P] += s[j];
      squares[j % P] += q[j];
    }
    blocks -= run;
  }
  accumulate_pixels(p, pixels % kBlockPixels, P, sums, squares);
}

void accumulate(const uint8_t* p, size_t pixels, int channels, Sum* sums, Sum* squares) {
  switch (channels) {
    case 1:
      return accumulate_blocks<1>(p, pixels, sums, squares);
    case 2:
      return accumulate_blocks<2>(p, pixels, sums, squares);
    case 3:
      return accumulate_blocks<3>(p, pixels, sums, squares);
    case kMaxBlockChannels:
      return accumulate_blocks<kMaxBlockChannels>(p, pixels, sums, squares);
    default:
      return accumulate_pixels(p, pixels, channels, sums, squares);
  }
}

// n times the variance of n values summing to `sum` whose squares sum to `squares`, exactly:
// whole - fraction / n, with 0 <= fraction < n. nullopt if it is negative, which no values have.
// n > 0 and sum <= 255 n.
struct ScaledVariance {
  Sum whole;
  Sum fraction;
};
std::optional<ScaledVariance> scaled_variance(Sum sum, Sum squares, Sum n) {
  // With sum = a n + r (r < n): n var = squares - sum^2 / n = m - r^2 / n, where
  // m = squares - a^2 n - 2 a r is an integer (a <= 255, so nothing here overflows). With
  // r^2 = b n + s (s < n; r^2 < 2^128), n var = (m - b) - s / n.
  const Sum a = sum / n, r = sum % n;
  const Sum square_part = a * a * n + 2 * a * r;
  const Sum b = r * r / n, s = r * r % n;
  if (squares < square_part || squares - square_part < b + (s > 0 ? 1 : 0)) return std::nullopt;
  return ScaledVariance{squares - square_part - b, s};
}

}  // namespace

int statistics_channels(const Field& field) {
  if (field.dtype == DType::kBytes) return 3;
  if (field.dtype != DType::kUint8 || field.is_variable_length()) return 0;
  if (field.shape.size() == 2) return 1;
  if (field.shape.size() == 3 && field.shape[0] <= kMaxStatisticsChannels)
    return static_cast<int>(field.shape[0]);
  return 0;
}

ChannelStatistics::ChannelStatistics(int channels) : sums_(channels), squares_(channels) {}

Result<ChannelStatistics> ChannelStatistics::from_sums(uint64_t pixels, std::vector<Sum> sums,
                                                       std::vector<Sum> squares) {
  const size_t channels = sums.size();
  if (channels < 1 || channels > kMaxStatisticsChannels || squares.size() != channels)
    return invalid_argument("statistics of " + std::to_string(channels) + " and " +
                            std::to_string(squares.size()) + " channels (sums and squares): 1 .. " +
                            std::to_string(kMaxStatisticsChannels) + ", the same");
  for (size_t c = 0; c < channels; ++c) {
    const bool possible = pixels == 0
                              ? sums[c] == 0 && squares[c] == 0
                              : sums[c] <= Sum{255} * pixels && squares[c] <= Sum{255} * sums[c] &&
                                    scaled_variance(sums[c], squares[c], pixels).has_value();
    if (!possible)
      return invalid_argument("statistics of channel " + std::to_string(c) + " are not those of " +
                              std::to_string(pixels) + " pixel values of 0 .. 255");
  }
  ChannelStatistics stats(static_cast<int>(channels));
  stats.sums_ = std::move(sums);
  stats.squares_ = std::move(squares);
  stats.pixels_ = pixels;
  return stats;
}

void ChannelStatistics::add_planes(const uint8_t* data, size_t plane_pixels) {
  for (int c = 0; c < channels(); ++c)
    accumulate(data + c * plane_pixels, plane_pixels, 1, &sums_[c], &squares_[c]);
  pixels_ += plane_pixels;
}

void ChannelStatistics::add_interleaved(const uint8_t* data, size_t width, size_t height,
                                        size_t stride) {
  for (size_t y = 0; y < height; ++y)
    accumulate(data + y * stride, width, channels(), sums_.data(), squares_.data());
  pixels_ += width * height;
}

Status ChannelStatistics::merge(const ChannelStatistics& other) {
  if (other.channels() != channels())
    return invalid_argument("statistics of " + std::to_string(other.channels()) +
                            " channels cannot be merged into statistics of " +
                            std::to_string(channels()));
  for (int c = 0; c < channels(); ++c) {
    sums_[c] += other.sums_[c];
    squares_[c] += other.squares_[c];
  }
  pixels_ += other.pixels_;
  return Status::ok();
}

FieldStatistics ChannelStatistics::summary() const {
  FieldStatistics out;
  out.pixels = pixels_;
  if (pixels_ == 0) return out;
  const long double nf = static_cast<long double>(pixels_);
  for (int c = 0; c < channels(); ++c) {
    // An accumulator's sums are those of pixel values (from_sums checks them): n var, whole -
    // fraction / n, is not negative. With a fraction it is computed without cancellation as
    // (whole - 1) + (n - fraction) / n: every integer exact, a single rounding where the
    // fraction is added.
    const ScaledVariance v = *scaled_variance(sums_[c], squares_[c], pixels_);
    const long double n_var = v.fraction == 0
                                  ? static_cast<long double>(v.whole)
                                  : static_cast<long double>(v.whole - 1) +
                                        static_cast<long double>(pixels_ - v.fraction) / nf;
    const long double mean = static_cast<long double>(sums_[c] / pixels_) +
                             static_cast<long double>(sums_[c] % pixels_) / nf;
    out.mean.push_back(static_cast<double>(mean / 255));
    out.std.push_back(static_cast<double>(std::sqrt(n_var / nf) / 255));
  }
  return out;
}

bool ChannelStatistics::operator==(const ChannelStatistics& other) const {
  return pixels_ == other.pixels_ && sums_ == other.sums_ && squares_ == other.squares_;
}

}  // namespace stoker
