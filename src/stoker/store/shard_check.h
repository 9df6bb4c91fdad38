#pragma once
// Whether an opened shard is the one a manifest names: its schema, record count and index
// checksum (ShardReader::open has checked the file itself). Used wherever a shard is opened
// for a dataset: a local directory's, and a downloaded one before the cache admits it.

#include "stoker/store/manifest.h"
#include "stoker/store/shard_reader.h"
#include "stoker/util/status.h"

namespace stoker {

// kCorrupt naming the reader's path and what differs.
Status check_shard_matches(const ShardReader& reader, const ShardInfo& info, const Schema& schema);

}  // namespace stoker
