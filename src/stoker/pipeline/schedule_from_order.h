#pragma once
// The shard schedule (store/shard_schedule.h) of a loader's order: each shard's use interval in
// epoch e and e + 1, read off their global orders (sampler.h). Pure, stateless; O(N log S).

#include <cstdint>
#include <vector>

#include "stoker/store/shard_schedule.h"

namespace stoker {

// The schedule of epoch `epoch` whose global order is `order` and whose next epoch's is
// `next_order` (both permutations of [0, N)), for shards starting at the dataset indices
// `shard_starts` (S + 1 of them: each shard's first index, then N).
ShardSchedule schedule_from_order(int64_t epoch, const std::vector<int64_t>& order,
                                  const std::vector<int64_t>& next_order,
                                  const std::vector<int64_t>& shard_starts);

}  // namespace stoker
