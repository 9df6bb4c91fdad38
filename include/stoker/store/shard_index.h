#pragma once
// One entry of a shard's index as stored on disk (docs/FORMAT.md). The format unit
// (src/stoker/store/shard_format.h) owns the rest of the layout; this struct is public only
// so that ShardReader's O(1) record accessors inline.

#include <cstdint>

namespace stoker::shard_format {

struct IndexEntry {
  uint64_t offset;    // of the record's first byte, from the start of the file
  uint64_t length;    // of the record in bytes
  uint64_t checksum;  // xxh3_64 of the record's bytes
};

}  // namespace stoker::shard_format
