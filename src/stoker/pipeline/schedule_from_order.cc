#include "stoker/pipeline/schedule_from_order.h"

#include <cassert>

#include "stoker/util/range_of.h"

namespace stoker {
namespace {

// Each shard's first and last position in `order`, whose samples are records of `per_record`.
std::vector<ShardUse> uses_in(const std::vector<int64_t>& order,
                              const std::vector<int64_t>& shard_starts, int64_t per_record) {
  std::vector<ShardUse> uses(shard_starts.size() - 1);
  const RangeOf<int64_t> shard_of(shard_starts);
  const auto scan = [&](auto record_of) {  // one loop for each, no division where it is 1
    for (int64_t p = 0; p < static_cast<int64_t>(order.size()); ++p) {
      ShardUse& use = uses[shard_of(record_of(order[p]))];
      if (use.first == ShardUse::kUnused) use.first = p;
      use.last = p;
    }
  };
  if (per_record == 1)
    scan([](int64_t sample) { return sample; });
  else
    scan([per_record](int64_t sample) { return sample / per_record; });
  return uses;
}

}  // namespace

ShardSchedule schedule_from_order(int64_t epoch, const std::vector<int64_t>& order,
                                  const std::vector<int64_t>& next_order,
                                  const std::vector<int64_t>& shard_starts, int64_t per_record) {
  assert(!shard_starts.empty());
  ShardSchedule schedule;
  schedule.epoch = epoch;
  schedule.epoch_size = static_cast<int64_t>(order.size());
  schedule.now = uses_in(order, shard_starts, per_record);
  schedule.after = uses_in(next_order, shard_starts, per_record);
  return schedule;
}

}  // namespace stoker
