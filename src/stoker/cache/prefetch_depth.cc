#include "stoker/cache/prefetch_depth.h"

#include <algorithm>
#include <cmath>

namespace stoker {

void RateMeter::add(double amount, double seconds) {
  if (!(seconds > 0) || !(amount >= 0)) return;
  const double rate = amount / seconds;
  rate_ = rate_ == 0 ? rate : weight_ * rate + (1 - weight_) * rate_;
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
