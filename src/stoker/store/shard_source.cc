#include "stoker/store/shard_source.h"

#include <fmt/format.h>

namespace stoker {

Status ShardSource::record_error(int shard, uint64_t record, uint64_t global,
                                 const Status& status) const {
  return Status(status.code(),
                fmt::format("{}: record {}: {} (dataset record {})", readers()[shard]->path(),
                            record, status.message(), global));
}

std::string new_notes_line(const ShardSourceStats& stats, int64_t said) {
  const int64_t count = stats.notes - said;
  if (count <= 0) return "";
  if (count == 1) return stats.last_note;
  return fmt::format("{} (the last of {} notes)", stats.last_note, count);
}

Result<ShardPins> ShardSource::acquire_all(const std::vector<int>& shards,
                                           const std::function<bool()>& cancelled,
                                           const std::function<bool()>& /*awaited*/) {
  ShardPins pins;
  pins.reserve(shards.size());
  for (int s : shards) {
    STOKER_ASSIGN_OR_RETURN(ShardPin pin, acquire(s, cancelled));
    pins.push_back(std::move(pin));
  }
  return pins;
}

}  // namespace stoker
