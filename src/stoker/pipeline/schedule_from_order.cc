#include "stoker/pipeline/schedule_from_order.h"

#include <cassert>

#include "stoker/util/range_of.h"

namespace stoker {
namespace {

// Each shard's first and last position in `order`.
std::vector<ShardUse> uses_in(const std::vector<int64_t>& order,
                              const std::vector<int64_t>& shard_starts) {
  std::vector<ShardUse> uses(shard_starts.size() - 1);
  const RangeOf<int64_t> shard_of(shard_starts);
  for (int64_t p = 0; p < static_cast<int64_t>(order.size()); ++p) {
    ShardUse& use = uses[shard_of(order[p])];
    if (use.first == ShardUse::kUnused) use.first = p;
    use.last = p;
  }
  return uses;
}

}  // namespace

ShardSchedule schedule_from_order(int64_t epoch, const std::vector<int64_t>& order,
                                  const std::vector<int64_t>& next_order,
                                  const std::vector<int64_t>& shard_starts) {
  assert(!shard_starts.empty());
  ShardSchedule schedule;
  schedule.epoch = epoch;
  schedule.epoch_size = static_cast<int64_t>(order.size());
  schedule.now = uses_in(order, shard_starts);
  schedule.after = uses_in(next_order, shard_starts);
  return schedule;
}

}  // namespace stoker
