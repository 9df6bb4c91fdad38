#pragma once
// Dataset: an opened dataset — its manifest and a memory-mapped ShardReader per shard from its
// ShardSource (shard_source.h) — addressed by global record index 0..size()-1 in shard order.
// open(dir) opens a directory and cross-checks every shard against the manifest (present, same
// schema, same record count and index checksum), all of them mapped until the Dataset is gone.
// A source that maps shards only while they are pinned (a remote dataset's cache) needs its
// readers to pin() the records' shards first and hold the pins while they read them. Immutable
// after open: thread-safe for concurrent reads.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/store/manifest.h"
#include "stoker/store/shard_reader.h"
#include "stoker/store/shard_source.h"
#include "stoker/util/range_of.h"
#include "stoker/util/status.h"

namespace stoker {

class Dataset {
 public:
  // A dataset directory (LocalShardSource).
  static Result<std::shared_ptr<const Dataset>> open(const std::string& dir);
  // The dataset `source` gives (not null).
  static Result<std::shared_ptr<const Dataset>> open(std::shared_ptr<ShardSource> source);

  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  // Its directory, or a remote dataset's URL.
  const std::string& dir() const { return source_->location(); }
  // Where the data comes from, in one line: the directory, or the URL and what is cached.
  std::string describe() const { return source_->describe(); }
  const ShardSource& source() const { return *source_; }
  const Manifest& manifest() const { return *manifest_; }
  const Schema& schema() const { return manifest_->schema; }
  uint64_t size() const { return manifest_->records; }
  int num_shards() const { return static_cast<int>(manifest_->shards.size()); }
  // Shard s's reader (see needs_pins()).
  const ShardReader& shard(int s) const { return *readers_[s]; }

  // Whether a shard must be pinned while its records are read: false for a directory, whose
  // shards stay mapped (then pin() is free and returns no pins).
  bool needs_pins() const { return needs_pins_; }
  // Pins of the shards of records indices[0..n), fetched first where they are not at hand, in
  // shard order (ShardSource::acquire_all): the first failure (a one-line error naming its
  // shard) or kCancelled when `cancelled` (may be empty) returns true while a fetch waits. The
  // records' bytes are valid while the pins are held. `awaited` (may be empty) says whether
  // the loader waits for these records now (a remote source's cache waits for room unless it
  // does).
  Result<ShardPins> pin(const int64_t* indices, size_t n, const std::function<bool()>& cancelled,
                        const std::function<bool()>& awaited = nullptr) const {
    if (!needs_pins_) return ShardPins();
    return pin_shards(indices, n, cancelled, awaited);
  }

  // Whether the source follows the loader's plan (ShardSource::follows_plan): a loader computes
  // none for a dataset that does not.
  bool follows_plan() const { return follows_plan_; }
  // The loader's plan and position, passed to the source so that it can fetch ahead
  // (ShardSource::advise, advance); nothing for a dataset that does not follow it.
  void advise(const ShardSchedule& schedule, int64_t lookahead) const {
    if (follows_plan_) source_->advise(schedule, lookahead);
  }
  void advance(int64_t position) const {
    if (follows_plan_) source_->advance(position);
  }
  // Each shard's first global index, then size() (num_shards() + 1 values).
  const std::vector<uint64_t>& shard_starts() const { return shards_.starts(); }
  // Calls visit(i) for every record i in order, each shard pinned (fetched first where it must
  // be, waiting for room as pin() does) while its records are visited: a pin's failure, or
  // visit's first non-ok Status, ends it and is returned. For readers that go through the whole
  // dataset (verify, label checks).
  Status for_each_record(const std::function<Status(uint64_t i)>& visit) const;

  // Shard and index within it of global record i (i < size()).
  struct Location {
    int shard;
    uint64_t record;
  };
  Location locate(uint64_t i) const {
    const int s = static_cast<int>(shards_(i));
    return {s, i - shard_starts()[s]};
  }
  // The bytes of global record i (its fixed fields start at schema().fixed_offset()).
  ByteSpan record(uint64_t i) const {
    Location at = locate(i);
    return readers_[at.shard]->record(at.record);
  }
  // Which of its stored record's samples global record i is (ShardReader::part: a record may
  // give several samples, a video its clips); 0 for a record that gives one.
  int64_t part(uint64_t i) const {
    Location at = locate(i);
    return readers_[at.shard]->part(at.record);
  }
  // Where global record i's bytes start in the mapping that holds them
  // (ShardReader::record_start: a viewed record's are not built).
  const uint8_t* record_start(uint64_t i) const {
    Location at = locate(i);
    return readers_[at.shard]->record_start(at.record);
  }
  // `status` about global record i, named the way every record error is, by its source
  // (ShardSource::record_error: "SHARD_PATH: record R: MESSAGE (dataset record I)" for
  // stoker's shards), with status's code.
  Status record_error(uint64_t i, const Status& status) const;
  // Bytes of fixed field `field` of global record i.
  const uint8_t* fixed_field(uint64_t i, int field) const {
    Location at = locate(i);
    return readers_[at.shard]->fixed_field(at.record, field);
  }
  // For a reader about to read records[k] of `records` (n of them) in order: prefetches the
  // index entry of records[k + 2 * kPrefetchDistance] and the bytes of records[k +
  // kPrefetchDistance]. Meant for readers that verify records in a random order (the loader's
  // checksum pass); `store_bench` (BM_RandomReadVerified/1) measures its effect.
  static constexpr size_t kPrefetchDistance = 8;
  void prefetch_ahead(const int64_t* records, size_t n, size_t k) const {
    if (k + 2 * kPrefetchDistance < n) {
      Location at = locate(static_cast<uint64_t>(records[k + 2 * kPrefetchDistance]));
      readers_[at.shard]->prefetch_index(at.record);
    }
    if (k + kPrefetchDistance < n) {
      Location at = locate(static_cast<uint64_t>(records[k + kPrefetchDistance]));
      readers_[at.shard]->prefetch(at.record);
    }
  }
  // out[k] = record(indices[k]) for k < n, with index entries prefetched a few records
  // ahead (the random index reads are what such a loop waits on).
  void resolve(const int64_t* indices, size_t n, ByteSpan* out) const {
    for (size_t k = 0; k < n; ++k) {
      if (k + kPrefetchDistance < n)
        prefetch_index(static_cast<uint64_t>(indices[k + kPrefetchDistance]));
      out[k] = record(static_cast<uint64_t>(indices[k]));
    }
  }
  // Hints the CPU to bring global record i's index entry into cache.
  void prefetch_index(uint64_t i) const {
    Location at = locate(i);
    readers_[at.shard]->prefetch_index(at.record);
  }
  // Checks record i's checksum; the error names the shard file and both record numbers.
  Status verify_record(uint64_t i) const;
  // Record i's error if it was found bad when read in place (ShardReader::bad: no data, whatever
  // fields are read), named by its source's record_error (the file, the record and why); ok
  // otherwise. Its shard pinned.
  Status found_bad(uint64_t i) const;

 private:
  Dataset() = default;
  // pin() for a source that needs pins.
  Result<ShardPins> pin_shards(const int64_t* indices, size_t n,
                               const std::function<bool()>& cancelled,
                               const std::function<bool()>& awaited) const;

  std::shared_ptr<ShardSource> source_;
  const Manifest* manifest_ = nullptr;           // the source's
  const ShardReader* const* readers_ = nullptr;  // the source's readers(), by shard
  bool needs_pins_ = false;
  bool follows_plan_ = false;
  // The global index of each shard's first record, then size().
  RangeOf<uint64_t> shards_;
};

}  // namespace stoker
