#pragma once
// ShardSchedule: when each shard of a dataset is used in an epoch e of the loader's order and
// in the epoch after it, as global positions (samples of the epoch consumed by all ranks
// together, docs/DESIGN.md contract 3), so that a shard source can prefetch what comes next and
// evict what is needed last (docs/REMOTE-DESIGN.md section 2, "The cache's schedule"). Made from
// the order by the pipeline (pipeline/schedule_from_order.h); read here, below it, by whoever
// keeps shards. A plain value.
//
// Positions of epoch e are [0, N), those of e + 1 are counted on from N: N + p. The padding
// positions of an epoch's last batches (sampler.h), which repeat its first samples, are not
// uses here; a cache keeps what the next batches need apart (their pins).

#include <cstdint>
#include <limits>
#include <vector>

namespace stoker {

// A shard's first and last position in one epoch; first = kUnused for a shard of no records.
struct ShardUse {
  static constexpr int64_t kUnused = -1;
  int64_t first = kUnused;
  int64_t last = kUnused;
};

struct ShardSchedule {
  // Next use of a shard used in neither epoch.
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  int64_t epoch = 0;            // e
  int64_t epoch_size = 0;       // N: the epoch's positions (an explicit one's: its sequence's)
  std::vector<ShardUse> now;    // per shard (manifest order), in epoch e
  std::vector<ShardUse> after;  // per shard, in epoch e + 1 (positions from 0 there)

  // The position at which shard `shard` is next needed from position `position` of epoch e
  // (in [0, N)): `position` itself while its use in e spans it, else its first in e if later,
  // else N + its first in e + 1, else kNever.
  int64_t next_use(int shard, int64_t position) const {
    const ShardUse& in_e = now[shard];
    if (in_e.first != ShardUse::kUnused && position <= in_e.last)
      return position >= in_e.first ? position : in_e.first;
    const ShardUse& in_next = after[shard];
    return in_next.first != ShardUse::kUnused ? epoch_size + in_next.first : kNever;
  }

  // The first position after `position` at which the shard's next use jumps ahead (the end of
  // its use in e, now.last + 1), or kNever: before it, next_use(shard, p) - p only falls or
  // stays as p grows, so a shard needed within a lookahead stays needed within it.
  int64_t use_ends(int shard, int64_t position) const {
    const ShardUse& in_e = now[shard];
    return in_e.first != ShardUse::kUnused && position <= in_e.last ? in_e.last + 1 : kNever;
  }

  // The position at which shard `shard` is next read whole from position `position`, for a
  // reader that keeps it in memory through each use: its first in e if not before `position`,
  // else N + its first in e + 1, else kNever.
  int64_t next_read(int shard, int64_t position) const {
    const ShardUse& in_e = now[shard];
    if (in_e.first != ShardUse::kUnused && position <= in_e.first) return in_e.first;
    const ShardUse& in_next = after[shard];
    return in_next.first != ShardUse::kUnused ? epoch_size + in_next.first : kNever;
  }
};

}  // namespace stoker
