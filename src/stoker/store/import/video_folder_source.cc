#include "stoker/store/import/video_folder_source.h"

#include <fmt/format.h>

#include "stoker/store/import/image_folder_listing_cache.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

// The fields' positions in video_record_schema().
constexpr int kVideoField = 0;
constexpr int kVideoLabelField = 1;

Schema video_record_schema() {
  // Valid by construction: distinct plain names.
  return std::move(Schema::create({{"video", DType::kBytes, {}}, {"label", DType::kInt64, {}}}))
      .value();
}

}  // namespace

ClassFolderFiles video_files(std::vector<std::string> extensions) {
  return {std::move(extensions), "a video extension", "a VideoFolder", kVideoFolderListingFolder};
}

Result<std::shared_ptr<VideoFolderSource>> VideoFolderSource::open(
    const std::string& root, std::vector<std::string> extensions,
    const ClassFolderSourceOptions& options) {
  STOKER_ASSIGN_OR_RETURN(ImageFolderListing listing,
                          cached_class_folder_listing(root, video_files(std::move(extensions)),
                                                      options.listing_cache_dir));
  std::shared_ptr<VideoFolderSource> source(new VideoFolderSource());
  STOKER_RETURN_IF_ERROR(
      source->lay_out(root, std::move(listing), video_record_schema(), options, nullptr));
  return source;
}

std::string VideoFolderSource::describe() const {
  return fmt::format("{} (a video folder: {} videos, {} classes, read in place)", location(),
                     listing().samples.size(), listing().classes.size());
}

std::vector<uint8_t> VideoFolderSource::make_record(int64_t label, const std::string* file,
                                                    std::string& /*bad*/) const {
  RecordEncoder encoder(manifest().schema);
  // A file is at most kMaxVideoFileBytes, under a bytes field's bound: the record encodes.
  if (file) throw_if_error(encoder.set_bytes(kVideoField, file->data(), file->size()));
  throw_if_error(encoder.set_fixed(kVideoLabelField, &label, sizeof label));
  return encoder.encode();
}

}  // namespace stoker
