#pragma once
// ImageFolderSource: an ImageFolder (torchvision's layout, image_folder_scan.h) read in place, as
// a record source (store/shard_source.h) of the image dataset's layout (store/image_record.h), so
// that the loader and every operation read it as they read a converted dataset. Record i is
// ImageFolder(root).samples[i]: the file's bytes as they are (a JPEG is not transcoded: the
// same pixels as the converted dataset, but a crop decodes the whole rows above it), its class
// index, the size its header gives, the file's size and XXH3-64.
//
// Units of reading (the manifest's shards): `files_per_unit` consecutive samples, each named by
// its first file's path relative to root. A unit is read when a pin of it is asked for: its files
// read and their headers parsed on the asking thread (others asking for it wait), its records
// built in memory (ShardReader::in_memory). It is let go when its last pin is, unless the
// loader's plan (advise, advance) uses it again within its lookahead. A file that cannot be read,
// or is not a JPEG or PNG stoker decodes, gives a record whose image is empty; record_error
// then names the file and why, so the loader's on_error reports or skips it.
//
// The listing is kept under `listing_cache_dir` (image_folder_listing_cache.h) when one is
// given. Thread-safe.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/store/import/image_folder_scan.h"
#include "stoker/store/shard_source.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

struct ImageFolderSourceOptions {
  // Samples per unit (>= 1). 1 reads file by file, as torchvision does, for any shuffle.
  int files_per_unit = 1;
  // Where the listing is cached ("" : listed at every open).
  std::string listing_cache_dir;
  int64_t max_pixels = image::kDefaultMaxPixels;  // larger images are bad records
};

class ImageFolderSource : public ShardSource,
                          public std::enable_shared_from_this<ImageFolderSource> {
 public:
  // Lists `root` (list_image_folder's errors) and lays its samples out in units.
  static Result<std::shared_ptr<ImageFolderSource>> open(const std::string& root,
                                                         const ImageFolderSourceOptions& options);

  // The classes and samples, torchvision's.
  const ImageFolderListing& listing() const { return listing_; }

  const Manifest& manifest() const override { return manifest_; }
  const std::string& location() const override { return root_; }
  std::string describe() const override;
  const std::vector<const ShardReader*>& readers() const override { return readers_; }
  bool needs_pins() const override { return true; }
  Result<ShardPin> acquire(int unit, const std::function<bool()>& cancelled) override;
  ShardSourceStats stats() const override;
  Status record_error(int unit, uint64_t record, uint64_t global,
                      const Status& status) const override;
  void advise(const ShardSchedule& schedule, int64_t lookahead) override;
  void advance(int64_t position) override;

 private:
  ImageFolderSource() = default;
  struct Unit {
    int pins = 0;
    bool reading = false;
    std::unique_ptr<ShardReader> reader;
  };
  // Unit u's reader, and the reasons of its bad records by global index.
  ShardReader read_unit(int u, std::map<uint64_t, std::string>& bad) const;
  void release(int u);
  // Whether unpinned unit u is kept: the plan uses it within the lookahead.
  bool wanted(int u) const STOKER_REQUIRES(mutex_);
  // Lets go of the unpinned units the plan no longer wants.
  void sweep() STOKER_REQUIRES(mutex_);

  std::string root_;
  ImageFolderSourceOptions options_;
  ImageFolderListing listing_;
  Manifest manifest_;
  std::vector<uint64_t> unit_starts_;        // first sample of each unit, then the sample count
  std::vector<const ShardReader*> readers_;  // entry u set while unit u is read

  mutable Mutex mutex_;
  std::condition_variable read_;  // a unit's read ended
  std::vector<Unit> units_ STOKER_GUARDED_BY(mutex_);
  std::vector<int> idle_ STOKER_GUARDED_BY(mutex_);                // units read and not pinned
  std::map<uint64_t, std::string> bad_ STOKER_GUARDED_BY(mutex_);  // global index -> reason
  ShardSchedule schedule_ STOKER_GUARDED_BY(mutex_);
  bool advised_ STOKER_GUARDED_BY(mutex_) = false;
  int64_t lookahead_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t position_ STOKER_GUARDED_BY(mutex_) = 0;
  uint64_t read_bytes_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t wait_ns_ STOKER_GUARDED_BY(mutex_) = 0;
};

}  // namespace stoker
