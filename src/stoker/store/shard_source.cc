#include "stoker/store/shard_source.h"

#include <fmt/format.h>

namespace stoker {

Status ShardSource::record_error(int shard, uint64_t record, uint64_t global,
                                 const Status& status) const {
  return Status(status.code(), fmt::format("{}: record {}: {} (dataset record {})",
                                           readers()[shard]->path(), record, status.message(),
                                           global));
}

}  // namespace stoker
