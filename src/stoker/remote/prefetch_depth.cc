#include "stoker/remote/prefetch_depth.h"

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

}  // namespace stoker
