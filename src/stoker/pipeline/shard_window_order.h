#pragma once
// The shard-window shuffle: the global order of an epoch that draws its samples from a window
// of about `window` shards at a time (defined in include/stoker/pipeline/sampler.h; the why in
// docs/REMOTE-DESIGN.md section 2). A pure function of (seed, epoch, window, the shards' record
// counts); stateless functions, safe from any thread.

#include <cstdint>
#include <vector>

namespace stoker {

// The window in samples, L = ceil(w * N / S) with w = min(window, S): every shard's records
// spread over L positions. Precondition: window >= 1, N = sum(shard_records) > 0.
int64_t shard_window_span(int64_t window, const std::vector<int64_t>& shard_records);

// The most shards live at once (between their first and last use) at any position of any
// epoch: M = floor((L - 1) / c_min) + 1 with c_min the smallest non-empty shard's records, and
// at most the non-empty shards. Same precondition.
int64_t live_shard_bound(int64_t window, const std::vector<int64_t>& shard_records);

// Epoch `epoch`'s global order, a permutation of [0, N) (dataset indices in shard order: shard
// s holds [sum of shard_records[0..s), + shard_records[s])). O(N + L) time and memory. Same
// precondition, and epoch >= 0.
std::vector<int64_t> shard_window_order(uint64_t seed, int64_t epoch, int64_t window,
                                        const std::vector<int64_t>& shard_records);

}  // namespace stoker
