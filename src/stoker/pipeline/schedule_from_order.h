#pragma once
// The shard schedule (store/shard_schedule.h) of a loader's order: each shard's use interval in
// epoch e and e + 1, read off their orders (sampler.h). Pure, stateless; O(N log S).

#include <cstdint>
#include <vector>

#include "stoker/store/shard_schedule.h"

namespace stoker {

// The schedule of epoch `epoch` whose global order is `order` and whose next epoch's is
// `next_order` (the loader's own: permutations of [0, N); an explicit epoch's: this rank's
// sequence, and an empty next order, not known yet), for shards starting at the dataset indices
// `shard_starts` (S + 1 of them: each shard's first index, then N). Its epoch_size is
// order.size(). `per_record` > 1: the orders hold samples, each record giving that many
// (Sampler::samples): sample s is of dataset index s / per_record.
ShardSchedule schedule_from_order(int64_t epoch, const std::vector<int64_t>& order,
                                  const std::vector<int64_t>& next_order,
                                  const std::vector<int64_t>& shard_starts, int64_t per_record = 1);

}  // namespace stoker
