#pragma once
// TranscodeCache: the faster path for images read in place (docs/DATA.md "Reading data in
// place"). Original JPEGs have no restart markers, and 15% of them or more are progressive, so a
// crop of one decodes every MCU before it; `stoker convert` stores each transcoded for crops
// (store/import/stored_image.h: lossless, the same pixels). This cache does the same to a unit
// of a source read in place (store/unit_read_source.h) the first time the unit is read, and keeps
// the unit's transcoded records as one shard file (docs/FORMAT.md) under DIR, so that later
// epochs and runs decode the transcoded images.
//
// A unit's cached file is named by the XXH3-64 of its name and of the checksums of the records
// the source read (their index): a changed file gives other records, so another key, and is never
// served stale; the source still reads the original (its own checks stay), the saving is the
// decode. A cached file is checked whole (ShardReader::open, every record's checksum) when first
// opened by this process; a corrupt or truncated one is named in one line on stderr, deleted and
// rebuilt. The cache holds at most `budget_bytes`: a unit that does not fit is read as it is (not
// transcoded: a transcode not kept costs more than it saves), and nothing is evicted to make
// room (the loader's order changes every epoch; a fixed set of cached units is read at the
// faster speed every epoch). Units not of the image record layout (store/image_record.h), and
// records whose image does not transcode (a PNG kept as it is, a bad record), pass as they are.
// Thread-safe; processes may share DIR (files are written whole and renamed into place).

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "stoker/image/image_header.h"
#include "stoker/store/shard_reader.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

class TranscodeCache {
 public:
  // The cache at `dir` (created if missing) holding at most `budget_bytes`; kIoError naming
  // `dir` when it cannot be made or listed.
  static Result<std::shared_ptr<TranscodeCache>> open(
      const std::string& dir, uint64_t budget_bytes, int64_t max_pixels = image::kDefaultMaxPixels);

  // The transcoded records of the unit `original` (read by its source): from the cache, else
  // transcoded now and kept when they fit; `original` itself when the budget has no room or the
  // unit is not of image records. Never an error: a cache that cannot be written is passed over.
  ShardReader transcoded(ShardReader original);

  const std::string& dir() const { return dir_; }
  uint64_t held_bytes() const;

 private:
  TranscodeCache(std::string dir, uint64_t budget, int64_t max_pixels)
      : dir_(std::move(dir)), budget_(budget), max_pixels_(max_pixels) {}
  // The records of `original` with each image transcoded for crops, written to `path`.
  Result<ShardReader> build(const ShardReader& original, const std::string& path) const;

  const std::string dir_;
  const uint64_t budget_;
  const int64_t max_pixels_;
  mutable Mutex mutex_;
  uint64_t held_ STOKER_GUARDED_BY(mutex_) = 0;              // bytes of the cached files
  std::set<std::string> checked_ STOKER_GUARDED_BY(mutex_);  // files checked by this process
};

}  // namespace stoker
