#pragma once
// The shard-window shuffle's locality bound (docs/REMOTE-DESIGN.md section 2): how many shards
// its order reads at once, a static function of the window and the shards' record counts. Here
// rather than beside the order (pipeline/shard_window_order.h) because the remote cache checks
// its budget against it before a loader exists. Stateless functions, safe from any thread.

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

}  // namespace stoker
