#include "stoker/store/import/image_folder_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "stoker/store/image_record.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/store/import/image_folder_listing_cache.h"
#include "stoker/util/atomic_file.h"

namespace stoker {

Result<std::shared_ptr<ImageFolderSource>> ImageFolderSource::open(
    const std::string& root, const ImageFolderSourceOptions& options) {
  if (options.files_per_unit < 1)
    return invalid_argument(fmt::format("{}: files per unit {} is not a positive number", root,
                                        options.files_per_unit));
  std::shared_ptr<ImageFolderSource> source(new ImageFolderSource());
  source->root_ = root;
  source->options_ = options;
  STOKER_ASSIGN_OR_RETURN(source->listing_,
                          cached_image_folder_listing(root, options.listing_cache_dir));
  const std::vector<ImageFolderSample>& samples = source->listing_.samples;
  Manifest manifest;
  manifest.schema = image_record_schema();
  manifest.records = samples.size();
  manifest.source = root;
  manifest.class_names = source->listing_.classes;
  const std::string prefix = root + "/";
  for (size_t first = 0; first < samples.size(); first += options.files_per_unit) {
    const size_t end = std::min(samples.size(), first + options.files_per_unit);
    const std::string& path = samples[first].path;
    ShardInfo unit;
    unit.file = path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
    unit.records = end - first;
    manifest.shards.push_back(std::move(unit));
    source->unit_starts_.push_back(first);
  }
  source->unit_starts_.push_back(samples.size());
  source->set_manifest(std::move(manifest));
  return source;
}

std::string ImageFolderSource::describe() const {
  return fmt::format("{} (an image folder: {} images, {} classes, read in place)", root_,
                     listing_.samples.size(), listing_.classes.size());
}

Result<ShardReader> ImageFolderSource::read_unit(int u,
                                                 std::map<uint64_t, std::string>& bad) const {
  static const ImageRecordFields fields = ImageRecordFields::find(manifest().schema).value();
  std::vector<std::vector<uint8_t>> records;
  for (uint64_t i = unit_starts_[u]; i < unit_starts_[u + 1]; ++i) {
    const ImageFolderSample& sample = listing_.samples[i];
    ImageRecordValues values;
    values.label = sample.label;
    Result<std::string> file = read_file(sample.path, kMaxImageFileBytes);
    if (file.is_ok()) {
      values.original = {reinterpret_cast<const uint8_t*>(file.value().data()),
                         file.value().size()};
      Result<image::ImageHeader> header =
          image::read_image_header(values.original, options_.max_pixels);
      if (header.is_ok()) {
        values.stored = values.original;
        values.height = header.value().height;
        values.width = header.value().width;
      } else {
        bad[i] = header.status().message();
      }
    } else {
      bad[i] = image_file_read_error(file.status(), sample.path);
    }
    // A file is at most kMaxImageFileBytes: its record always encodes.
    records.push_back(encode_image_record(manifest().schema, fields, values).value());
  }
  return ShardReader::in_memory(listing_.samples[unit_starts_[u]].path, manifest().schema, records);
}

Status ImageFolderSource::record_error(int /*unit*/, uint64_t /*record*/, uint64_t global,
                                       const Status& status) const {
  const std::string bad = bad_reason(global);
  return Status(status.code(),
                fmt::format("{}: {} (dataset record {})", listing_.samples[global].path,
                            bad.empty() ? status.message() : bad, global));
}

}  // namespace stoker
