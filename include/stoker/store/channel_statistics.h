#pragma once
// ChannelStatistics: the per-channel mean and standard deviation of an image field's pixels,
// accumulated while a dataset is written and stored in its manifest (docs/FORMAT.md,
// "Statistics") so that training normalises with the data's own values. In [0, 1] units
// (pixel / 255), as torchvision's Normalize takes them; the std is the population std over every
// pixel of every record (all of a channel's values in one sample, not per-image values averaged).
//
// Exact and order-free: per channel, the pixel count and the integer sums of x and x^2 are kept
// (128-bit sums), so merging the accumulators of parts of the data in any order gives the same
// sums as one pass over all of it, and an import's statistics do not depend on its number of
// workers. The sums cannot overflow before the pixel count does: 2^64 - 1 pixels per channel
// (x <= 255, so sum x < 2^72 and sum x^2 < 2^80), 18 EB of 8-bit samples per channel, far beyond
// any dataset; adding more than that is a precondition violation.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

// Most channels a field's statistics are kept for (a [C,H,W] field with more gets none), which
// keeps the manifest small: 256, room for multispectral images.
constexpr int kMaxStatisticsChannels = 256;

// The channels statistics of `field` have: C for uint8 [C,H,W] (C <= kMaxStatisticsChannels),
// 1 for uint8 [H,W], 3 for a bytes field (encoded images, decoded to RGB); 0 for any other field,
// which has none. The same channels as the trainer's normalisation (pipeline/normalization.h).
int statistics_channels(const Field& field);

// The statistics of one field as the manifest stores them. Plain value.
struct FieldStatistics {
  std::vector<double> mean;  // per channel, in [0, 1]
  std::vector<double> std;   // per channel, population std, in (0, 0.5]
  uint64_t pixels = 0;       // per channel: every channel has as many
};

// Not thread-safe; give each thread its own and merge() them.
class ChannelStatistics {
 public:
  // An empty accumulator of `channels` channels (1 .. kMaxStatisticsChannels).
  explicit ChannelStatistics(int channels);

  int channels() const { return static_cast<int>(sums_.size()); }
  // Pixels added per channel.
  uint64_t pixels() const { return pixels_; }

  // Adds an image stored as planes (CHW): channels() planes of `plane_pixels` bytes back to back
  // at `data` (a uint8 [C,H,W] or [H,W] field as stored).
  void add_planes(const uint8_t* data, size_t plane_pixels);
  // Adds an image stored as interleaved rows (HWC): `height` rows of `width` pixels of
  // channels() bytes each, row y starting at data + y * stride (a decoded RGB image).
  void add_interleaved(const uint8_t* data, size_t width, size_t height, size_t stride);
  // Adds the pixels `other` has seen; kInvalidArgument if its channel count differs.
  Status merge(const ChannelStatistics& other);

  // Mean and population std per channel in [0, 1] units, and the pixel count; mean and std are
  // empty when no pixel has been added.
  FieldStatistics summary() const;

  // Equal sums and counts: the same pixel values were added, in whatever order.
  bool operator==(const ChannelStatistics& other) const;
  bool operator!=(const ChannelStatistics& other) const { return !(*this == other); }

 private:
  using Sum = unsigned __int128;
  std::vector<Sum> sums_;     // per channel: sum of x
  std::vector<Sum> squares_;  // per channel: sum of x^2
  uint64_t pixels_ = 0;
};

}  // namespace stoker
