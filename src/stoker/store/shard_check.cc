#include "stoker/store/shard_check.h"

#include <fmt/format.h>

namespace stoker {

Status check_shard_matches(const ShardReader& reader, const ShardInfo& info, const Schema& schema) {
  if (reader.schema() != schema)
    return corrupt(reader.path() + ": shard schema differs from the manifest's");
  if (reader.records() != info.records)
    return corrupt(fmt::format("{}: shard holds {} records, the manifest says {}", reader.path(),
                               reader.records(), info.records));
  if (reader.index_checksum() != info.index_checksum)
    return corrupt(reader.path() + ": shard index checksum differs from the manifest's");
  return Status::ok();
}

}  // namespace stoker
