#pragma once
// ClassFolderSource: what the sources of class folders read in place share (an image folder,
// image_folder_source.h; a video folder, video_folder_source.h): a folder listed as torchvision
// lists it (image_folder_scan.h), as a record source (store/shard_source.h) whose record i is
// the listing's sample i, built by the derived class from the file's bytes and class index.
//
// Units of reading (the manifest's shards): `files_per_unit` consecutive samples, each named by
// its first file's path relative to root, read and let go as store/unit_read_source.h says: its
// files read when a pin of it is asked for. A file that cannot be read, or that the derived
// class refuses, gives a record it makes without the file; record_error then names the file and
// why, so the loader's on_error reports or skips it.
//
// A file may give several samples, or none (ClassFolderParts: a video's clips): its record is
// then the reader's record of each (ShardReader::in_memory's parts, the file's bytes held once),
// the dataset's samples its files' samples in listing order, a unit `files_per_unit` files that
// give samples; a file the derived class found bad when it laid them out gives one sample, bad.
//
// The listing is kept under `listing_cache_dir` (image_folder_listing_cache.h) when one is
// given. A folder listed elsewhere (a remote one, access/remote_image_folder.h) is laid out
// with its files: they are read through store/in_place_files.h (access/remote_files.h's, from
// the shard cache), and those the loader's plan needs next are fetched ahead of it
// (InPlaceFiles::fetch_ahead, plan). Thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/store/import/image_folder_scan.h"
#include "stoker/store/in_place_files.h"
#include "stoker/store/unit_read_source.h"

namespace stoker {

struct ClassFolderSourceOptions {
  // Samples per unit (>= 1). 1 reads file by file, as torchvision does, for any shuffle.
  int files_per_unit = 1;
  // Where the listing is cached ("" : listed at every open).
  std::string listing_cache_dir;
  // Units whose files are fetched ahead of the loader's order (listed files: remote ones); 0
  // none.
  int units_ahead = 0;
  // Where given, the bytes sample i's record is made from in place of its file's (an error: a
  // bad record saying why): a remote video folder's references (access/remote_video_opener.h),
  // its files never read here nor fetched ahead.
  std::function<Result<std::string>(uint64_t sample)> record_bytes;
};

// How many samples each listed file gives (ClassFolderSource::lay_out), where not one each.
struct ClassFolderParts {
  std::vector<int64_t> counts;  // by listing sample, each at least 0
  // By listing sample: why a file is bad (it gives one sample, bad, and is not read).
  std::map<uint64_t, std::string> bad;
  std::string text;  // Manifest::sample_parts: what a file's samples are
};

class ClassFolderSource : public UnitReadSource {
 public:
  // The classes and samples, torchvision's.
  const ImageFolderListing& listing() const { return listing_; }

  const std::string& location() const override { return root_; }
  // Each file's path and stat now (a remote one's as listed); a file that cannot be stat'ed
  // has size 0 and stamp -1 (its read fails as a bad record).
  Result<std::vector<FileStamp>> file_stamps() const override;
  Status record_error(int unit, uint64_t record, uint64_t global,
                      const Status& status) const override;

 protected:
  // `max_file_bytes`: larger files are bad records, unread (it bounds a unit's memory).
  explicit ClassFolderSource(uint64_t max_file_bytes) : max_file_bytes_(max_file_bytes) {}

  // Lays out `listing`'s samples (of the folder at `root`) in units, under `schema`, sample i's
  // file being `files`' file i (null: the listing's local paths), each file giving one sample,
  // or `parts`' counts (local files, or records options.record_bytes makes). Errors: files_per_unit
  // < 1, not one file (or count) per sample.
  Status lay_out(std::string root, ImageFolderListing listing, Schema schema,
                 const ClassFolderSourceOptions& options, std::shared_ptr<const InPlaceFiles> files,
                 ClassFolderParts parts = {});

  // The record of a sample of class `label` whose file holds `file` (null: it could not be
  // read); sets `bad` to why a file it refuses is bad.
  virtual std::vector<uint8_t> make_record(int64_t label, const std::string* file,
                                           std::string& bad) const = 0;

 private:
  Result<ShardReader> read_unit(int u, std::map<uint64_t, std::string>& bad,
                                const std::function<bool()>& cancelled) const override;
  void units_ahead(const std::vector<int>& units) override;
  void reads_planned(std::function<int64_t(int unit)> next_read, int64_t position) override;
  // Sample i's file's bytes, or why they cannot be read (one line, without its path); kCancelled
  // as read_unit's.
  Result<std::string> read_sample(uint64_t i, const std::function<bool()>& cancelled) const;

  uint64_t max_file_bytes_;
  std::string root_;
  ImageFolderListing listing_;
  ClassFolderParts parts_;
  std::vector<uint64_t> unit_files_;     // the listing's files that give samples, in order
  std::vector<uint64_t> unit_starts_;    // unit u's first in unit_files_, then their count
  std::vector<uint64_t> sample_starts_;  // unit_files_[k]'s first sample, then the sample count
  std::vector<int> unit_of_;             // by listing sample, its unit (-1: none)
  std::function<Result<std::string>(uint64_t sample)> record_bytes_;  // options'
  // null: the listing's local paths. Declared last, so gone first: its downloads ahead use the
  // plan given by reads_planned, which reads unit_starts_.
  std::shared_ptr<const InPlaceFiles> files_;
};

}  // namespace stoker
