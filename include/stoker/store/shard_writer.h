#pragma once
// ShardWriter: writes one shard file (docs/FORMAT.md) through an AtomicFile: records are
// appended, finish() writes index and footer and renames the file into place. A writer
// destroyed before finish() leaves nothing behind. Not thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/store/shard_index.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/status.h"

namespace stoker {

class ShardWriter {
 public:
  static Result<ShardWriter> create(const std::string& path, const Schema& schema);

  ShardWriter(ShardWriter&&) noexcept = default;
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends one encoded record (see RecordEncoder); its size must be at least
  // schema.min_record_bytes().
  Status append(const uint8_t* record, size_t size);
  // Writes index and footer, fsyncs and renames into place.
  Status finish();

  uint64_t records() const { return index_.size(); }
  // The file's size if finished now with `extra` more record bytes in one more record
  // (header, records, padding, index, footer).
  uint64_t projected_bytes(uint64_t extra) const;
  // XXH3-64 of the index, valid after finish(); the manifest records it.
  uint64_t index_checksum() const { return index_checksum_; }
  const std::string& path() const { return file_.path(); }

 private:
  ShardWriter(AtomicFile file, size_t min_record_bytes, uint64_t header_checksum);

  AtomicFile file_;
  size_t min_record_bytes_;
  uint64_t header_checksum_;
  uint64_t index_checksum_ = 0;
  std::vector<shard_format::IndexEntry> index_;
};

}  // namespace stoker
