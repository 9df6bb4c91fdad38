#include "stoker/store/import/image_folder_source.h"

#include <fmt/format.h>

#include "stoker/store/image_record.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/store/import/image_folder_listing_cache.h"

namespace stoker {

ImageFolderSource::ImageFolderSource(int64_t max_pixels)
    : ClassFolderSource(kMaxImageFileBytes), max_pixels_(max_pixels) {}

Result<std::shared_ptr<ImageFolderSource>> ImageFolderSource::open(
    const std::string& root, const ImageFolderSourceOptions& options) {
  STOKER_ASSIGN_OR_RETURN(
      ImageFolderListing listing,
      cached_class_folder_listing(root, image_files(), options.listing_cache_dir));
  return open_listed(root, std::move(listing), nullptr, options);
}

Result<std::shared_ptr<ImageFolderSource>> ImageFolderSource::open_listed(
    std::string location, ImageFolderListing listing, std::shared_ptr<const InPlaceFiles> files,
    const ImageFolderSourceOptions& options) {
  std::shared_ptr<ImageFolderSource> source(new ImageFolderSource(options.max_pixels));
  STOKER_RETURN_IF_ERROR(source->lay_out(std::move(location), std::move(listing),
                                         image_record_schema(), options, std::move(files)));
  return source;
}

std::string ImageFolderSource::describe() const {
  return fmt::format("{} (an image folder: {} images, {} classes, read in place)", location(),
                     listing().samples.size(), listing().classes.size());
}

std::vector<uint8_t> ImageFolderSource::make_record(int64_t label, const std::string* file,
                                                    std::string& bad) const {
  static const ImageRecordFields fields = ImageRecordFields::find(manifest().schema).value();
  ImageRecordValues values;
  values.label = label;
  if (file) {
    values.original = {reinterpret_cast<const uint8_t*>(file->data()), file->size()};
    Result<image::ImageHeader> header = image::read_image_header(values.original, max_pixels_);
    if (header.is_ok()) {
      values.stored = values.original;
      values.height = header.value().height;
      values.width = header.value().width;
    } else {
      bad = header.status().message();
    }
  }
  // A file is at most kMaxImageFileBytes: its record always encodes.
  return encode_image_record(manifest().schema, fields, values).value();
}

}  // namespace stoker
