#pragma once
// ImageFolderSource: an ImageFolder (torchvision's layout, image_folder_scan.h) read in place, as
// a record source (store/shard_source.h) of the image dataset's layout (store/image_record.h), so
// that the loader and every operation read it as they read a converted dataset. Record i is
// ImageFolder(root).samples[i]: the file's bytes as they are (a JPEG is not transcoded: the
// same pixels as the converted dataset, but a crop decodes the whole rows above it), its class
// index, the size its header gives, the file's size and XXH3-64.
//
// Units of reading (the manifest's shards): `files_per_unit` consecutive samples, each named by
// its first file's path relative to root, read and let go as store/unit_read_source.h says: its
// files read and their headers parsed when a pin of it is asked for. A file that cannot be read,
// or is not a JPEG or PNG stoker decodes, gives a record whose image is empty; record_error
// then names the file and why, so the loader's on_error reports or skips it.
//
// The listing is kept under `listing_cache_dir` (image_folder_listing_cache.h) when one is
// given. A folder listed elsewhere (a remote one, access/remote_image_folder.h) is opened with
// open_listed: its files are read through store/in_place_files.h (access/remote_files.h's, from
// the shard cache), and those the loader's plan needs next are fetched ahead of it
// (InPlaceFiles::fetch_ahead, plan). Thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/store/import/image_folder_scan.h"
#include "stoker/store/in_place_files.h"
#include "stoker/store/unit_read_source.h"

namespace stoker {

struct ImageFolderSourceOptions {
  // Samples per unit (>= 1). 1 reads file by file, as torchvision does, for any shuffle.
  int files_per_unit = 1;
  // Where the listing is cached ("" : listed at every open).
  std::string listing_cache_dir;
  int64_t max_pixels = image::kDefaultMaxPixels;  // larger images are bad records
  // Units whose files are fetched ahead of the loader's order (open_listed's files: remote
  // ones); 0 none.
  int units_ahead = 0;
};

class ImageFolderSource : public UnitReadSource {
 public:
  // Lists `root` (list_image_folder's errors) and lays its samples out in units.
  static Result<std::shared_ptr<ImageFolderSource>> open(const std::string& root,
                                                         const ImageFolderSourceOptions& options);

  // The folder `location` as `listing` lists it, sample i's file being `files`' file i.
  static Result<std::shared_ptr<ImageFolderSource>> open_listed(
      std::string location, ImageFolderListing listing, std::shared_ptr<const InPlaceFiles> files,
      const ImageFolderSourceOptions& options);

  // The classes and samples, torchvision's.
  const ImageFolderListing& listing() const { return listing_; }

  const std::string& location() const override { return root_; }
  std::string describe() const override;
  // Each image's path and stat now (a remote one's as listed); a file that cannot be stat'ed
  // has size 0 and stamp -1 (its read fails as a bad record).
  Result<std::vector<FileStamp>> file_stamps() const override;
  Status record_error(int unit, uint64_t record, uint64_t global,
                      const Status& status) const override;

 private:
  ImageFolderSource() = default;
  // Lays the listing's samples out in units.
  // Their bytes are `files`' sizes where given (remote files: what a cache's budget is checked
  // against).
  static Result<std::shared_ptr<ImageFolderSource>> lay_out(std::string root,
                                                            ImageFolderListing listing,
                                                            const ImageFolderSourceOptions& options,
                                                            const InPlaceFiles* files);
  Result<ShardReader> read_unit(int u, std::map<uint64_t, std::string>& bad,
                                const std::function<bool()>& cancelled) const override;
  void units_ahead(const std::vector<int>& units) override;
  void reads_planned(std::function<int64_t(int unit)> next_read, int64_t position) override;
  // Sample i's file's bytes, or why they cannot be read (one line, without its path); kCancelled
  // as read_unit's.
  Result<std::string> read_sample(uint64_t i, const std::function<bool()>& cancelled) const;

  std::string root_;
  ImageFolderSourceOptions options_;
  ImageFolderListing listing_;
  std::vector<uint64_t> unit_starts_;  // first sample of each unit, then the sample count
  // null: the listing's local paths. Declared last, so gone first: its downloads ahead use the
  // plan given by reads_planned, which reads unit_starts_.
  std::shared_ptr<const InPlaceFiles> files_;
};

}  // namespace stoker
