#pragma once
// ShardSource: where an opened dataset's shards come from. A local directory's shards are all
// mapped at open (store/local_shard_source.h); a remote dataset's are fetched into a local cache
// and mapped while in use (docs/REMOTE-DESIGN.md). Dataset reads records through a source's
// readers: the reader of shard s is valid while a pin of s is held, and acquire() makes one,
// fetching the shard first where it must. Implementations are thread-safe: any thread may
// acquire and release pins and read the readers of the shards it holds pinned.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/store/manifest.h"
#include "stoker/store/shard_reader.h"
#include "stoker/store/shard_schedule.h"
#include "stoker/util/status.h"

namespace stoker {

// Keeps one shard's mapping alive and its reader valid while held; releasing it (destruction,
// or being moved over) lets its source unmap or evict the shard. Move-only. A local source's
// pins hold nothing and cost nothing.
class ShardPin {
 public:
  ShardPin() = default;
  // `hold` is let go when the pin is: null, or what keeps the shard (its deleter unpins it).
  ShardPin(int shard, std::shared_ptr<void> hold) : shard_(shard), hold_(std::move(hold)) {}
  ShardPin(ShardPin&&) noexcept = default;
  ShardPin& operator=(ShardPin&&) noexcept = default;
  ShardPin(const ShardPin&) = delete;
  ShardPin& operator=(const ShardPin&) = delete;

  int shard() const { return shard_; }

 private:
  int shard_ = -1;
  std::shared_ptr<void> hold_;
};

// The pins of the shards some records lie in (Dataset::pin), one per shard.
using ShardPins = std::vector<ShardPin>;

// What a source has done since it was opened.
struct ShardSourceStats {
  uint64_t fetched_bytes = 0;  // shard bytes fetched from where the dataset is (0: local)
  int64_t wait_ns = 0;         // time acquire() waited for shards, summed over its callers
  // A remote source's measured pace and the depth it chose from them (0: not measured, local).
  double download_bytes_per_s = 0;  // one download's bandwidth, smoothed
  double records_per_s = 0;         // the loader's pace, smoothed
  int prefetch_shards = 0;          // shards fetched ahead past the loader's lookahead
  int download_streams = 0;         // downloads it runs at once now (tuned or fixed)
  int most_downloads = 0;           // the most that ran at once so far
  // What it noted that failed no read, for its user (the library prints nothing: the CLI prints
  // them, Python warns): how many so far, and the last one's one-line message. E.g. a transcode
  // cache's file found damaged, deleted and rebuilt (store/import/transcode_cache.h).
  int64_t notes = 0;
  std::string last_note;
};

// The line that tells a user the notes of `stats` after the first `said`: "" when there are
// none; the last one's message, with how many there were where more than one.
std::string new_notes_line(const ShardSourceStats& stats, int64_t said);

// A file that data read in place comes from, as it is now: its name (path, or redacted URL),
// size, and modification time in ns (or a remote object's XXH3-64 of its ETag).
struct FileStamp {
  std::string name;
  uint64_t size = 0;
  int64_t stamp = 0;
};

class ShardSource {
 public:
  virtual ~ShardSource() = default;

  // The dataset's manifest: one object for the source's life.
  virtual const Manifest& manifest() const = 0;
  // Where the dataset is: its directory, or its URL without credentials.
  virtual const std::string& location() const = 0;
  // One line for a run's start line: where the data comes from (and how much of it is cached).
  virtual std::string describe() const = 0;
  // Each shard's reader, in manifest order; the vector is never resized, and entry s is valid
  // while a pin of shard s is held (always, when needs_pins() is false).
  virtual const std::vector<const ShardReader*>& readers() const = 0;
  // False when every shard is mapped from open to destruction: then pins hold nothing and
  // records may be read without one.
  virtual bool needs_pins() const = 0;
  // A pin of shard `shard` (< manifest().shards.size()), fetched first if it is not at hand. Its
  // reader matches the manifest's entry (schema, records, index checksum). Waits until it is
  // there, a failure (a one-line error naming the shard), or `cancelled` (asked while it waits;
  // may be empty) returning true (kCancelled).
  virtual Result<ShardPin> acquire(int shard, const std::function<bool()>& cancelled) = 0;
  // Pins of `shards` (sorted, distinct; Dataset::pin), in that order: the first failure, or
  // kCancelled when `cancelled` (may be empty) returns true while one waits. `awaited` (may be
  // empty) says whether the loader waits for these records now, for a source that waits for
  // room before it fails. Default: acquire() each.
  virtual Result<ShardPins> acquire_all(const std::vector<int>& shards,
                                        const std::function<bool()>& cancelled,
                                        const std::function<bool()>& awaited);
  virtual ShardSourceStats stats() const = 0;
  // The stamps of the files the source reads in place, in order (store/data_identity.h); none
  // (the default) for a stoker dataset, whose manifest's index checksums cover every record.
  // Errors name the file.
  virtual Result<std::vector<FileStamp>> file_stamps() const { return std::vector<FileStamp>(); }
  // `status` about record `record` of shard `shard`, global record `global`, named the way
  // every record error is. Default: "SHARD_PATH: record R: MESSAGE (dataset record I)"; a
  // source whose shards present other files names the file the record came from.
  virtual Status record_error(int shard, uint64_t record, uint64_t global,
                              const Status& status) const;
  // Whether the loader's plan (advise, advance) changes what the source does: it fetches,
  // reads ahead or lets go of shards by it. Where it does not, the loader computes no plan for
  // it (an epoch's start then orders the epoch alone). Default: needs_pins().
  virtual bool follows_plan() const { return needs_pins(); }
  // The loader's plan, for a source that fetches ahead: the schedule of its current epoch (and
  // the next), and how many positions from the current one its next batches may read (shards
  // used there are never evicted). Called at each epoch's start and on a restore. Default: none.
  virtual void advise(const ShardSchedule& /*schedule*/, int64_t /*lookahead*/) {}
  // The loader's position in the advised epoch (samples taken by all ranks). Default: none.
  virtual void advance(int64_t /*position*/) {}
  // How many shards each of the source's parts holds, in order (an order over parts mixes
  // them: pipeline/global_order.h): one part of every shard but for a mixture of datasets
  // (store/mixed_shard_source.h).
  virtual std::vector<int> part_shards() const {
    return {static_cast<int>(manifest().shards.size())};
  }
  // The tokens each part's records hold in all, in order (a token source's input_ids, padding
  // not counted: store/import/token_source.h), 0 for a part of other data (the default): what
  // a mixture's shares of tokens weigh.
  virtual std::vector<int64_t> part_tokens() const { return {0}; }
};

}  // namespace stoker
