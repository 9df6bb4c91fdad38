#pragma once
// What the table operations share (random_posterize, random_solarize, random_invert,
// random_autocontrast, random_equalize): PIL's ImageOps functions of those names end in
// Image.point, one 256-entry table per channel of an "L" or "RGB" image, its entries clipped to
// [0, 255]. ChannelTableOp applies such tables to a uint8 image [C, H, W] with probability p:
// one draw per sample from the operation's own stream, CounterRng::next_double() < p, then every
// channel through the table `table_of` makes from that channel's pixels.

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

using ChannelTable = std::array<uint8_t, 256>;
using ChannelHistogram = std::array<int64_t, 256>;

// The table of a channel, from its `count` pixels.
using ChannelTableOf = std::function<ChannelTable(const uint8_t* channel, size_t count)>;

inline ChannelTable identity_table() {
  ChannelTable table;
  for (int i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>(i);
  return table;
}

// Image.point's entry for `value`: clipped to [0, 255].
inline uint8_t clipped_entry(int64_t value) {
  return static_cast<uint8_t>(std::clamp<int64_t>(value, 0, 255));
}

// Each of the `channels` channels of `count` pixels at `pixels` through its table.
inline void apply_channel_tables(uint8_t* pixels, int64_t channels, size_t count,
                                 const ChannelTableOf& table_of) {
  for (int64_t c = 0; c < channels; ++c) {
    uint8_t* channel = pixels + c * count;
    const ChannelTable table = table_of(channel, count);
    for (size_t i = 0; i < count; ++i) channel[i] = table[channel[i]];
  }
}

// ImageOps.posterize(bits) (bits may be 0 or negative: every value 0), ImageOps.solarize(
// threshold) and ImageOps.invert's tables.
inline ChannelTable posterize_table(int64_t bits) {
  ChannelTable table;
  const int64_t low_bits = std::clamp<int64_t>(8 - bits, 0, 9);
  for (int i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>(i >> low_bits << low_bits);
  return table;
}

inline ChannelTable solarize_table(double threshold) {
  ChannelTable table;
  for (int i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>(i < threshold ? i : 255 - i);
  return table;
}

inline ChannelTable invert_table() {
  ChannelTable table;
  for (int i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>(255 - i);
  return table;
}

inline ChannelHistogram channel_histogram(const uint8_t* channel, size_t count) {
  ChannelHistogram histogram{};
  for (size_t i = 0; i < count; ++i) ++histogram[channel[i]];
  return histogram;
}

// ImageOps.autocontrast's table of a channel (random_autocontrast.cc).
inline ChannelTable autocontrast_table(const uint8_t* channel, size_t count) {
  const ChannelHistogram histogram = channel_histogram(channel, count);
  int lo = 0;
  while (lo < 255 && histogram[lo] == 0) ++lo;
  int hi = 255;
  while (hi > 0 && histogram[hi] == 0) --hi;
  if (hi <= lo) return identity_table();
  const double scale = 255.0 / (hi - lo);
  const double offset = -lo * scale;
  ChannelTable table;
  for (int i = 0; i < 256; ++i) {
    const double stretched = i * scale;
    table[i] = clipped_entry(static_cast<int64_t>(stretched + offset));
  }
  return table;
}

// ImageOps.equalize's table of a channel (random_equalize.cc).
inline ChannelTable equalize_table(const uint8_t* channel, size_t count) {
  const ChannelHistogram histogram = channel_histogram(channel, count);
  int highest = 255;
  while (highest > 0 && histogram[highest] == 0) --highest;
  const int64_t step = (static_cast<int64_t>(count) - histogram[highest]) / 255;
  if (step == 0) return identity_table();
  ChannelTable table;
  int64_t below = step / 2;  // rounds each quotient to nearest
  for (int i = 0; i < 256; ++i) {
    table[i] = clipped_entry(below / step);
    below += histogram[i];
  }
  return table;
}

class ChannelTableOp : public PixelOp {
 public:
  ChannelTableOp(double p, const std::vector<int64_t>& shape, ChannelTableOf table_of)
      : p_(p),
        channels_(static_cast<size_t>(shape[0])),
        plane_(static_cast<size_t>(shape[1] * shape[2])),
        table_of_(std::move(table_of)) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    if (!(input.rng().next_double() < p_)) return Status::ok();
    apply_channel_tables(pixels, static_cast<int64_t>(channels_), plane_, table_of_);
    return Status::ok();
  }

 private:
  const double p_;
  const size_t channels_;
  const size_t plane_;  // H * W
  const ChannelTableOf table_of_;
};

// The factory of a table operation called `op`: images [1 or 3, H, W] only.
inline Result<std::shared_ptr<const PixelOp>> make_channel_table_op(const std::string& op, double p,
                                                                    const PixelContext& context,
                                                                    ChannelTableOf table_of) {
  if (Status s = context.check_image(op); !s.is_ok()) return s;
  return std::shared_ptr<const PixelOp>(
      std::make_shared<ChannelTableOp>(p, context.shape, std::move(table_of)));
}

// An operation's "p" parameter, torchvision's default 0.5.
inline ParamSpec probability_param(const std::string& what) {
  return ParamSpec::real("p", 0.5, "probability of " + what).in(0, 1);
}

}  // namespace stoker::ops
