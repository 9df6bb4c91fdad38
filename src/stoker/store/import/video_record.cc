#include "stoker/store/import/video_record.h"

#include <fmt/format.h>

#include "stoker/store/import/image_table_rows.h"
#include "stoker/store/record_encoder.h"
#include "stoker/video/clips_per_video.h"

namespace stoker {

Schema video_record_schema() {
  // Valid by construction: distinct plain names.
  return std::move(Schema::create({{"video", DType::kBytes, {}}, {"label", DType::kInt64, {}}}))
      .value();
}

int video_field(const Schema& schema) {
  const int f = schema.find("video");
  return f >= 0 && schema.fields()[f].dtype == DType::kBytes ? f : -1;
}

std::string clips_per_video_parts(int64_t k) { return video::ClipsPerVideo{k}.text(); }

std::vector<uint8_t> encode_video_record(const Schema& schema, ByteSpan video, int64_t label) {
  RecordEncoder encoder(schema);
  // At most kMaxVideoFileBytes, under a bytes field's bound: the record encodes.
  if (video.size > 0) throw_if_error(encoder.set_bytes(kVideoRecordVideo, video.data, video.size));
  throw_if_error(encoder.set_fixed(kVideoRecordLabel, &label, sizeof label));
  return encoder.encode();
}

UnitVideoRecords::UnitVideoRecords(const Schema& schema, uint64_t first, int64_t rows,
                                   std::map<uint64_t, std::string>& bad)
    : UnitRecords(schema, first, rows, bad, encode_video_record(schema, {}, 0)) {}

void UnitVideoRecords::add(std::optional<int64_t> label, std::optional<std::string_view> video,
                           std::optional<std::string_view> path, const std::string& folder) {
  if (full()) return;
  std::optional<std::string> reason;
  std::string from_file;
  if (!label) {
    reason = "its label is null";
  } else if (!video && !path) {
    reason = "its video is null";
  } else if (!video) {
    Result<std::string> read = table_file_at_path(folder, std::string(*path), kMaxVideoFileBytes);
    if (read.is_ok()) {
      from_file = std::move(read).value();
      video = from_file;
    } else {
      reason = fmt::format("its video's path '{}': {}", *path, read.status().message());
    }
  }
  if (!reason && video->size() > kMaxVideoFileBytes)
    reason = fmt::format("its video is larger than {} bytes", kMaxVideoFileBytes);
  const ByteSpan bytes =
      reason ? ByteSpan{}
             : ByteSpan{reinterpret_cast<const uint8_t*>(video->data()), video->size()};
  append(encode_video_record(schema_, bytes, label.value_or(0)), std::move(reason));
}

}  // namespace stoker
