#pragma once
// WebDatasetSource: WebDataset tars (store/in_place_files.h: local ones named as
// webdataset_tars.h says, or remote ones through the shard cache, access/remote_files.h) read
// in place, as a record
// source (store/shard_source.h) of the image dataset's layout (store/image_record.h), so that the
// loader and every operation read them as they read a converted dataset. A unit of reading (a
// manifest shard, read as store/unit_read_source.h says) is `samples_per_unit` consecutive
// samples of one tar, or the whole tar; local tars are read a sample a unit
// (access/sources/webdataset.cc: member by member, as an image folder is read file by file), so
// that memory holds the samples the loader's plan needs soon, not whole tars; records are
// the tars' samples in order (record i of a tar is its i-th sample (webdataset_samples.h): the
// image is the first of its `jpg`, `jpeg`, `png`, `webp` members, as it is (not transcoded), the
// label its `cls` member or the one webdataset_fields.h chooses (a decimal integer as text; -1
// where the options say none is read), height
// and width from the image's header, original_size and original_checksum the image member's); then
// a field for each other member field every sample holds (webdataset_fields.h: bytes, or a .npy
// member's array; one only some samples hold is left out, and describe() names it with how many
// do). Classes have no names. Tars where no sample has an image (of videos: `mp4` members, say)
// are records of the label and those fields alone.
//
// Each tar's index (tar_index.h) is built when the source opens (`index_threads` at once), from
// the cache folder's copy where it is current; a unit then reads only its members, each checked
// against the index's checksum. A bad record, named by record_error with its tar and member, is a
// sample the grouping refuses, one missing its image or its label, whose label is
// not an integer, whose image stoker does not decode, whose .npy member is not an array of its
// field's dtype and shape, and every sample of a tar changed since its index was built; the
// loader's on_error raises or skips it. A tar that cannot be opened is acquire's error.
// Thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/store/image_record.h"
#include "stoker/store/import/tar_index.h"
#include "stoker/store/import/webdataset_fields.h"
#include "stoker/store/import/webdataset_samples.h"
#include "stoker/store/in_place_files.h"
#include "stoker/store/unit_read_source.h"

namespace stoker {

struct WebDatasetSourceOptions {
  std::string index_cache_dir;  // where tar indexes are kept ("": built at every open)
  int index_threads = 8;        // tars indexed at once when the source opens (>= 1)
  int64_t max_pixels = image::kDefaultMaxPixels;  // larger images are bad records
  // Tars fetched ahead of the loader's order (InPlaceFiles::fetch_ahead: remote tars): the
  // next ones the plan needs that are not in memory. 0: none.
  int tars_ahead = 0;
  // Samples per unit (1: any shuffle reads only the members it needs); 0: a unit is a whole tar
  // (remote tars: the shard cache holds whole tars, and its floor counts units' bytes).
  int samples_per_unit = 0;
  // The label and the fields every sample must hold (webdataset_fields.h): "" the first of
  // cls, label, class, txt; "none" no label (the records' label is -1).
  std::string label;
  std::vector<std::string> required;
};

class WebDatasetSource : public UnitReadSource {
 public:
  // The local tars `spec` names (webdataset_tars' errors), each indexed (its errors).
  static Result<std::shared_ptr<WebDatasetSource>> open(const std::string& spec,
                                                        const WebDatasetSourceOptions& options);
  // The tars of `files`, each indexed (tar_index_of's errors); `location` names them all (the
  // spec, its URLs redacted).
  static Result<std::shared_ptr<WebDatasetSource>> open(std::shared_ptr<const InPlaceFiles> files,
                                                        const std::string& location,
                                                        const WebDatasetSourceOptions& options);

  const std::string& location() const override { return spec_; }
  std::string describe() const override;
  // Each tar's name and identity as indexed when the source was opened.
  Result<std::vector<FileStamp>> file_stamps() const override;
  Status record_error(int unit, uint64_t record, uint64_t global,
                      const Status& status) const override;

 private:
  WebDatasetSource() = default;
  Result<ShardReader> read_unit(int u, std::map<uint64_t, std::string>& bad,
                                const std::function<bool()>& cancelled) const override;
  void units_ahead(const std::vector<int>& units) override;
  void reads_planned(std::function<int64_t(int unit)> next_read, int64_t position) override;

  std::string spec_;
  WebDatasetSourceOptions options_;
  std::shared_ptr<const InPlaceFiles> files_;
  // A unit: samples [first, first + count) of tar `tar`.
  struct TarUnit {
    size_t tar = 0;
    size_t first = 0;
    size_t count = 0;
  };
  // Adds the units of tar `tar`'s samples (options_.samples_per_unit) to units_, tar_units_,
  // starts_ and `manifest`'s shards.
  void add_units(size_t tar, Manifest& manifest);

  std::vector<TarIndex> tars_;
  std::vector<std::vector<WebDatasetSample>> samples_;  // of each tar
  std::vector<TarUnit> units_;
  std::vector<std::pair<int, int>> tar_units_;  // each tar's units: [first, end)
  std::vector<uint64_t> starts_;                // first record of each unit, then the count
  WebDatasetFields fields_;                     // the label's and the other fields
  bool has_images_ = false;  // some sample has an image member: the image record's layout
  ImageRecordFields image_fields_;
};

}  // namespace stoker
