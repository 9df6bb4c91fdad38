#include "stoker/store/import/examined_videos.h"

#include <cstring>

#include "stoker/store/import/class_folder_source.h"
#include "stoker/store/import/video_record.h"
#include "stoker/store/record_view.h"

namespace stoker {
namespace {

Result<video::VideoFacts> examine(ByteSpan bytes, video::VideoDecode decode, int64_t max_pixels) {
#if STOKER_WITH_VIDEO
  return video::examine_video("", bytes, decode, max_pixels);
#else
  (void)bytes, (void)decode, (void)max_pixels;
  return unsupported(
      "this stoker is built without video (FFmpeg's libraries were not found: docs/INSTALL.md)");
#endif
}

// Each record's file relative to the folder, for a class folder read in place whose records are
// its files (not clips); empty otherwise.
std::vector<std::string> record_files(const Dataset& dataset) {
  const auto* folder = dynamic_cast<const ClassFolderSource*>(&dataset.source());
  if (folder == nullptr || folder->listing().samples.size() != dataset.size()) return {};
  const std::string root = dataset.dir() + "/";
  std::vector<std::string> names;
  for (const ImageFolderSample& sample : folder->listing().samples)
    names.push_back(sample.path.rfind(root, 0) == 0 ? sample.path.substr(root.size())
                                                    : sample.path);
  return names;
}

}  // namespace

Status for_each_video(const Dataset& dataset, uint64_t count, video::VideoDecode decode,
                      int64_t max_pixels, const std::function<void(const ExaminedVideo&)>& visit) {
  const Schema& schema = dataset.schema();
  const int field = video_field(schema);
  const int label = schema.find("label");
  const bool labelled = label >= 0 && schema.fields()[label].dtype == DType::kInt64 &&
                        schema.fields()[label].is_fixed() && schema.fields()[label].shape.empty();
  const std::vector<std::string> files = record_files(dataset);
  bool enough = false;  // the visit stops once `count` videos are seen
  const Status status = dataset.for_each_record([&](uint64_t i) {
    if (i >= count) {
      enough = true;
      return Status(StatusCode::kCancelled, "enough videos");
    }
    ExaminedVideo video;
    video.record = i;
    video.name = files.empty() ? "record " + std::to_string(i) : files[i];
    const ByteSpan record = dataset.record(i);
    if (labelled) std::memcpy(&video.label, fixed_field(schema, record, label), sizeof(int64_t));
    video.status = dataset.found_bad(i);
    if (video.status.is_ok()) {
      Result<ByteSpan> bytes = variable_field(schema, record, field);
      Result<video::VideoFacts> facts = bytes.is_ok() ? examine(bytes.value(), decode, max_pixels)
                                                      : Result<video::VideoFacts>(bytes.status());
      if (facts.is_ok()) {
        video.facts = facts.value();
      } else {
        video.status = facts.status();
      }
    }
    visit(video);
    return Status::ok();
  });
  return enough ? Status::ok() : status;
}

Result<uint64_t> check_videos(const Dataset& dataset, video::VideoDecode decode,
                              const std::function<void(const Status&)>& bad) {
  uint64_t count = 0;
  STOKER_RETURN_IF_ERROR(for_each_video(
      dataset, dataset.size(), decode, video::kDefaultMaxFramePixels, [&](const ExaminedVideo& v) {
        if (v.status.is_ok() || !dataset.found_bad(v.record).is_ok()) return;
        ++count;
        bad(dataset.record_error(v.record, v.status));
      }));
  return count;
}

}  // namespace stoker
