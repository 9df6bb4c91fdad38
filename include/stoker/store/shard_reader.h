#pragma once
// ShardReader: read-only, memory-mapped access to one shard file (docs/FORMAT.md). open()
// checks magics, version, header and index checksums and every index entry's bounds, so that
// record access afterwards is O(1) and cannot read outside the file. The index is copied when
// it is checked, so a record is always read and verified as the entry checked at open says (a
// shard swapped in place fails its records' checksums). Record checksums are checked on demand
// (verify_record). A reader may also hold records built in memory (in_memory: a data source
// that presents other files in stoker's record layout, store/shard_source.h), or records read in
// place as views of another file's bytes (viewed: record_views.h); an in-memory reader's records
// may be marked bad (mark_bad). Immutable once shared (a viewed reader builds its records' bytes
// once, the first time record() is asked for): thread-safe for concurrent reads.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "stoker/store/record_view.h"
#include "stoker/store/record_views.h"
#include "stoker/store/schema.h"
#include "stoker/store/shard_index.h"
#include "stoker/util/mapped_file.h"
#include "stoker/util/status.h"

namespace stoker {

class ShardReader {
 public:
  static Result<ShardReader> open(const std::string& path);
  // A reader of `records` (each an encoded record of `schema`, at least its min_record_bytes()),
  // held in memory under the name `name` (what errors name), their checksums computed here.
  static ShardReader in_memory(std::string name, Schema schema,
                               const std::vector<std::vector<uint8_t>>& records);
  // The same, record k giving `parts[k]` samples (0 or more; one number per record): the
  // reader's records are those samples, record k's `parts[k]` one after another, each reading
  // record k's bytes, which are held once (a video's clips: docs/ARCHITECTURE.md, "a record
  // may give several samples"). part(i) says which of its record's samples sample i is.
  static ShardReader in_memory(std::string name, Schema schema,
                               const std::vector<std::vector<uint8_t>>& records,
                               const std::vector<int64_t>& parts);
  // A reader of `records` records of `schema` (a view per field: of a fixed field, of its own
  // type or an integer type widened to an int64 field; or a computed field, fixed or
  // variable-length: kInternal otherwise) read in place through `views`, named `name`. Nothing
  // is built nor checksummed: the loader's copy widens (or computes) each field straight from
  // the views into its batch slot. record() (for other readers
  // of records' bytes) builds the records in stoker's layout the first time it is called;
  // verify_record is always ok (the bytes are the file's, which has no checksum: whoever made
  // the views checked their values).
  static Result<ShardReader> viewed(std::string name, Schema schema, uint64_t records,
                                    RecordViews views);

  ShardReader(ShardReader&&) noexcept = default;
  ShardReader& operator=(ShardReader&&) noexcept = default;
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  // The shard file's path, or an in-memory reader's name.
  const std::string& path() const { return name_; }
  const Schema& schema() const { return schema_; }
  uint64_t records() const { return count_; }
  uint64_t file_bytes() const { return bytes_; }
  uint64_t index_checksum() const { return index_checksum_; }

  // Bytes of record i (i < records()).
  ByteSpan record(uint64_t i) const {
    if (viewed_) return built_record(i);
    const shard_format::IndexEntry& e = entry(i);
    return {data_ + e.offset, e.length};
  }
  // Bytes of fixed field `field` of record i (precondition: the field is fixed).
  const uint8_t* fixed_field(uint64_t i, int field) const {
    return stoker::fixed_field(schema_, record(i), field);
  }
  // Bytes of the variable field `field` (a bytes field) of record i; kCorrupt if its lengths
  // do not fit the record.
  Result<ByteSpan> variable_field(uint64_t i, int field) const;
  // Which of its stored record's samples record i is (in_memory with parts), else 0.
  int64_t part(uint64_t i) const { return parts_.empty() ? 0 : parts_[i]; }
  // A viewed reader's views (record i of the reader is record i of the views), or null.
  const RecordViews* views() const { return viewed_ ? &viewed_->views : nullptr; }
  // Where record i's bytes start (a viewed reader's: its views'), in the mapping that holds
  // them: for a check that the mapped file changed, without building a viewed record.
  const uint8_t* record_start(uint64_t i) const {
    return viewed_ ? viewed_->views.start(i) : record(i).data;
  }
  // Hints the CPU to bring record i's index entry into cache.
  void prefetch_index(uint64_t i) const {
    if (!viewed_) __builtin_prefetch(&index_[i]);
  }
  // Hints the CPU to bring record i into cache. Reads i's index entry: call prefetch_index(i)
  // some records earlier, else this load itself stalls.
  void prefetch(uint64_t i) const {
    if (viewed_) {
      __builtin_prefetch(viewed_->views.start(i));
      return;
    }
    const shard_format::IndexEntry& e = entry(i);
    for (uint64_t at = 0; at < e.length; at += 64) __builtin_prefetch(data_ + e.offset + at);
  }
  // Checks record i against its stored XXH3-64; kCorrupt naming shard and record if it differs.
  Status verify_record(uint64_t i) const;
  // Whether record i stands for one found bad when it was read in place (its values empty or
  // zero: never data; its source's record_error says why): one it was marked with, if any.
  bool bad(uint64_t i) const {
    return !bad_.empty() && std::binary_search(bad_.begin(), bad_.end(), i);
  }
  // Marks records `records` (sorted, each < records()) bad, before the reader is shared.
  void mark_bad(std::vector<uint64_t> records) { bad_ = std::move(records); }

 private:
  ShardReader() = default;
  const shard_format::IndexEntry& entry(uint64_t i) const { return index_[i]; }
  // A viewed reader's record i, its records built the first time.
  ByteSpan built_record(uint64_t i) const;

  // A viewed reader's views and the records built from them when first asked for.
  struct Viewed {
    RecordViews views;
    std::once_flag built;
    std::vector<uint8_t> records;  // one after the other
    std::vector<uint64_t> starts;  // record i: records[starts[i], starts[i + 1])
  };
  std::unique_ptr<Viewed> viewed_;

  MappedFile file_;
  std::vector<uint8_t> memory_;  // an in-memory reader's records (data_ points into it)
  std::string name_;
  uint64_t bytes_ = 0;
  Schema schema_;
  const uint8_t* data_ = nullptr;
  std::vector<shard_format::IndexEntry> index_;  // checked at open (see above)
  std::vector<uint64_t> bad_;   // the records marked bad, sorted (beside what each record reads)
  std::vector<int64_t> parts_;  // by record, which sample of its stored record (empty: all 0)
  uint64_t count_ = 0;
  uint64_t index_checksum_ = 0;
};

}  // namespace stoker
