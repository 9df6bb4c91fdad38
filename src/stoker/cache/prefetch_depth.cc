#include "stoker/cache/prefetch_depth.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace stoker {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void RateMeter::add(double amount, double seconds) {
  if (!(seconds > 0) || !(amount >= 0)) return;
  const double rate = amount / seconds;
  rate_ = rate_ == 0 ? rate : weight_ * rate + (1 - weight_) * rate_;
}

void PrefetchMeter::restart(int64_t position, int64_t now_ns) {
  started_ = true;
  since_ns_ = now_ns;
  since_position_ = position;
}

void PrefetchMeter::moved(int64_t position, int64_t now_ns) {
  if (!started_) {
    restart(position, now_ns);
    return;
  }
  if (now_ns - since_ns_ < kPaceSpanNs || position <= since_position_) return;
  pace_.add(static_cast<double>(position - since_position_), (now_ns - since_ns_) / 1e9);
  since_ns_ = now_ns;
  since_position_ = position;
}

PrefetchInputs PrefetchMeter::inputs(double unit_bytes, double unit_records,
                                     int max_streams) const {
  PrefetchInputs in;
  in.shard_bytes = unit_bytes;
  in.shard_records = unit_records;
  in.stream_bytes_per_s = bandwidth_.per_second();
  in.records_per_s = pace_.per_second();
  in.max_streams = max_streams;
  in.min_streams = std::min(in.min_streams, in.max_streams);
  return in;
}

int prefetch_depth(const PrefetchInputs& in) {
  if (!(in.stream_bytes_per_s > 0) || !(in.records_per_s > 0) || !(in.shard_records > 0))
    return std::clamp(in.unmeasured_depth, 1, in.max_depth);
  const double download_s = in.shard_bytes / in.stream_bytes_per_s;
  const double read_s = in.shard_records / in.records_per_s;
  const double depth = 1 + std::ceil(1.5 * download_s / read_s);
  return static_cast<int>(std::clamp(depth, 1.0, static_cast<double>(in.max_depth)));
}

int download_streams(const PrefetchInputs& in) {
  if (!(in.stream_bytes_per_s > 0) || !(in.records_per_s > 0) || !(in.shard_records > 0))
    return in.min_streams;
  const double read_bytes_per_s = in.records_per_s * in.shard_bytes / in.shard_records;
  const double streams = std::ceil(1.5 * read_bytes_per_s / in.stream_bytes_per_s);
  return static_cast<int>(std::clamp(streams, static_cast<double>(in.min_streams),
                                     static_cast<double>(in.max_streams)));
}

int streams_that_fit(uint64_t budget_bytes, uint64_t floor_bytes, uint64_t largest_shard_bytes,
                     int max_streams) {
  if (budget_bytes <= floor_bytes || largest_shard_bytes == 0) return 1;
  const uint64_t fit = (budget_bytes - floor_bytes) / largest_shard_bytes;
  return static_cast<int>(std::clamp<uint64_t>(fit, 1, static_cast<uint64_t>(max_streams)));
}

}  // namespace stoker
