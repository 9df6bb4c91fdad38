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
// opened by this cache; a corrupt or truncated one is deleted and rebuilt, and named in a one-line
// note to the caller (the library prints nothing: docs/DESIGN.md contract 9).
//
// The cache holds at most `budget_bytes`. A unit that does not fit makes room by deleting the
// least recently used cached files, but never one this cache has opened or written, nor one
// used by any process since it was opened: the loader's order changes every epoch, so the set a
// run has cached stays fixed and is read at the faster speed every epoch, and what gives way is
// what a changed file, another dataset or an old run left. Where that cannot make room, nothing
// is deleted and the unit is read as it is (not transcoded: a transcode not kept costs more than
// it saves). A file's use is its mtime, set when it is written and touched each time it is
// opened, so the order holds across processes and runs. Units not of the image record layout
// (store/image_record.h), and records whose image does not transcode (a PNG kept as it is, a bad
// record), pass as they are.
// Thread-safe; processes may share DIR: files are written whole and renamed into place, and an
// opened file is read through its mapping, which outlives another process's deleting it.

#include <cstdint>
#include <map>
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
  // transcoded now and kept when they fit (after room is made: see above); `original` itself
  // when they do not or the unit is not of image records. Never an error: a cache that cannot be
  // written is passed over. `*note` (where given) is set to a one-line message naming the cached
  // file when it was found damaged and rebuilt, and left as it is otherwise.
  ShardReader transcoded(ShardReader original, std::string* note = nullptr);

  const std::string& dir() const { return dir_; }
  // The bytes of the cached files as last counted (at open, and when room was made), with this
  // cache's changes since, and of the files it is writing.
  uint64_t held_bytes() const;

 private:
  TranscodeCache(std::string dir, uint64_t budget, int64_t max_pixels, int64_t opened_ns)
      : dir_(std::move(dir)), budget_(budget), max_pixels_(max_pixels), opened_ns_(opened_ns) {}
  // The records of `original` with each image transcoded for crops, written to `path`.
  Result<ShardReader> build(const ShardReader& original, const std::string& path) const;
  // Whether `bytes` more fit, after deleting (oldest use first) what may give way for them (see
  // above); deletes nothing when all of it would not make room. Counts the folder afresh.
  bool make_room(uint64_t bytes) STOKER_REQUIRES(mutex_);
  // Takes the file `path` out of the count: gone, or about to be deleted with `bytes` on disk
  // (0: unknown). A file this cache used counts as the bytes it had.
  void forget(const std::string& path, uint64_t bytes) STOKER_REQUIRES(mutex_);

  const std::string dir_;
  const uint64_t budget_;
  const int64_t max_pixels_;
  const int64_t opened_ns_;  // files used since (mtime, ns since the epoch) never give way
  mutable Mutex mutex_;
  // Bytes of the cached files as last counted, with this cache's changes since, and of the
  // files it is writing (at the size reserved for each).
  uint64_t held_ STOKER_GUARDED_BY(mutex_) = 0;
  // The files it checked whole or wrote, and their bytes.
  std::map<std::string, uint64_t> used_ STOKER_GUARDED_BY(mutex_);
  std::set<std::string> building_ STOKER_GUARDED_BY(mutex_);  // files it is writing
  uint64_t reserved_ STOKER_GUARDED_BY(mutex_) = 0;           // held_'s part for them
  // steady_clock ns before which make_room does not list the folder again (it found no room).
  int64_t next_listing_ns_ STOKER_GUARDED_BY(mutex_) = 0;
};

}  // namespace stoker
