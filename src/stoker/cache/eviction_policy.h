#pragma once
// Eviction: which shards a full cache gives up to admit another (docs/REMOTE-DESIGN.md section
// 3, "Eviction"). Pure: no I/O, no clock; the shard cache describes its entries as they stand
// and is told the victims. Stateless functions, safe from any thread.
//
//   next-use  Belady's choice with the loader's schedule: the farthest next use first, and only
//             shards needed later than the incoming one, so a prefetch never displaces what is
//             needed sooner. The cache prefetches within a horizon (the next shards the
//             bandwidth needs hiding), not as far as the budget allows: swapping shards that are
//             all needed next epoch for one another would download each swap twice
//             (bench/remote/cache_simulation.cc measured 1.7x the floor that way, 1.00x so).
//   lru       the least recently used first, whatever comes next: the comparison, and the one
//             choice for shards whose future is unknown (another dataset's).
// Neither ever names a pinned shard (mapped by a reader) or one the next batches need.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "stoker/cache/data_access.h"  // EvictionPolicy

namespace stoker {

// A cached shard as eviction sees it. Plain value.
struct CacheEntry {
  uint64_t bytes = 0;
  // When it is next needed: ShardSchedule::next_use at the reader's position (its kNever for
  // none); a larger value is later.
  int64_t next_use = 0;
  int64_t last_use = 0;      // when it was last read or admitted, on any clock that only grows
  bool pinned = false;       // mapped by a reader
  bool needed_soon = false;  // protected: within the positions the next batches read
};

// The entries to evict, as indices into `entries` in the order to evict them, whose bytes add
// up to at least `bytes_needed`, for an incoming shard next needed at `incoming_next_use`; none
// for bytes_needed 0. nullopt when no such choice exists under `policy`: the evictable bytes are
// too few, or (next-use) they would include a shard needed no later than the incoming one; the
// incoming shard then waits. Ties: next-use takes the larger shard first, then the lower index;
// lru the lower index.
std::optional<std::vector<size_t>> choose_victims(EvictionPolicy policy,
                                                  const std::vector<CacheEntry>& entries,
                                                  uint64_t bytes_needed, int64_t incoming_next_use);

}  // namespace stoker
