#pragma once
// The shard-window shuffle: the global order of an epoch that draws its samples from a window
// of about `window` shards at a time (defined in include/stoker/pipeline/sampler.h; the why in
// docs/REMOTE-DESIGN.md section 2). A pure function of (seed, epoch, window, the shards' record
// counts); stateless functions, safe from any thread.

#include <cstdint>
#include <vector>

#include "stoker/store/shard_window_bound.h"

namespace stoker {

// Epoch `epoch`'s global order, a permutation of [0, N) (dataset indices in shard order: shard
// s holds [sum of shard_records[0..s), + shard_records[s])). O(N + L) time and memory (L:
// shard_window_span, store/shard_window_bound.h). Precondition: window >= 1, N > 0, epoch >= 0.
std::vector<int64_t> shard_window_order(uint64_t seed, int64_t epoch, int64_t window,
                                        const std::vector<int64_t>& shard_records);

}  // namespace stoker
