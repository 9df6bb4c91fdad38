#include "stoker/store/shard_window_bound.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace stoker {

using u128 = unsigned __int128;

int64_t shard_window_span(int64_t window, const std::vector<int64_t>& shard_records) {
  const auto shards = static_cast<int64_t>(shard_records.size());
  const int64_t n = std::accumulate(shard_records.begin(), shard_records.end(), int64_t{0});
  assert(window >= 1 && n > 0);
  const u128 spread = static_cast<u128>(std::min(window, shards)) * static_cast<u128>(n);
  return static_cast<int64_t>((spread + static_cast<u128>(shards) - 1) / static_cast<u128>(shards));
}

int64_t live_shard_bound(int64_t window, const std::vector<int64_t>& shard_records) {
  const int64_t span = shard_window_span(window, shard_records);
  int64_t smallest = 0;
  int64_t non_empty = 0;
  for (const int64_t c : shard_records) {
    if (c == 0) continue;
    smallest = non_empty == 0 ? c : std::min(smallest, c);
    ++non_empty;
  }
  return std::min((span - 1) / smallest + 1, non_empty);
}

}  // namespace stoker
