#include "stoker/pipeline/shard_window_order.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "stoker/util/cancel_scope.h"
#include "stoker/util/permutation.h"
#include "stoker/util/rng.h"

namespace stoker {
namespace {

using u128 = unsigned __int128;

int64_t total_records(const std::vector<int64_t>& shard_records) {
  return std::accumulate(shard_records.begin(), shard_records.end(), int64_t{0});
}

}  // namespace

std::vector<int64_t> shard_window_order(uint64_t seed, int64_t epoch, int64_t window,
                                        const std::vector<int64_t>& shard_records) {
  const auto shards = static_cast<int64_t>(shard_records.size());
  const int64_t n = total_records(shard_records);
  const int64_t span = shard_window_span(window, shard_records);

  // 1. pi: the shards permuted (Fisher-Yates); 2. start[s] = C_j of shard s = pi(j).
  const std::vector<int64_t> pi = fisher_yates(shards, seed, shard_order_stream(epoch));
  std::vector<int64_t> start(static_cast<size_t>(shards));
  for (int64_t j = 0, c = 0; j < shards; c += shard_records[pi[j]], ++j) start[pi[j]] = c;

  // 3-4. Record i of shard s has the key start[s] * 2^20 + floor(r_i * L * 2^20 / 2^64), with
  // r_i * L an exact 128-bit product: bucket floor(key / 2^20) = start[s] + floor(r_i * L /
  // 2^64) in [0, N + L), and within a bucket the key's low 20 bits.
  const uint64_t stream = window_stream(epoch);
  auto key_of = [&](int64_t s, int64_t i) {
    const u128 spread = static_cast<u128>(random_at(seed, stream, static_cast<uint64_t>(i))) *
                        static_cast<u128>(span);
    return std::pair<int64_t, uint32_t>(start[s] + static_cast<int64_t>(spread >> 64),
                                        static_cast<uint32_t>(spread >> 44) & 0xfffffu);
  };
  // 5. Sorted by (key, i): a counting sort on the bucket, visiting records by ascending i, then
  // each bucket (a record or two on average) sorted by the low bits, i breaking ties.
  std::vector<int64_t> bucket_start(static_cast<size_t>(n + span) + 1, 0);
  for (int64_t s = 0, i = 0; s < shards; ++s) {
    for (int64_t k = 0; k < shard_records[s]; ++k, ++i) {
      poll_cancellation(i);
      ++bucket_start[key_of(s, i).first + 1];
    }
  }
  std::partial_sum(bucket_start.begin(), bucket_start.end(), bucket_start.begin());
  struct Slot {
    uint32_t low;
    int64_t index;
  };
  std::vector<Slot> slots(static_cast<size_t>(n));
  std::vector<int64_t> next = bucket_start;
  for (int64_t s = 0, i = 0; s < shards; ++s) {
    for (int64_t k = 0; k < shard_records[s]; ++k, ++i) {
      poll_cancellation(i);
      const auto [bucket, low] = key_of(s, i);
      slots[next[bucket]++] = Slot{low, i};
    }
  }
  for (size_t b = 0; b + 1 < bucket_start.size(); ++b) {
    poll_cancellation(static_cast<int64_t>(b));
    std::sort(slots.begin() + bucket_start[b], slots.begin() + bucket_start[b + 1],
              [](const Slot& x, const Slot& y) {
                return x.low != y.low ? x.low < y.low : x.index < y.index;
              });
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::transform(slots.begin(), slots.end(), order.begin(),
                 [](const Slot& slot) { return slot.index; });
  return order;
}

}  // namespace stoker
