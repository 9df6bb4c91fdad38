#pragma once
// The records of videos read in place (a video folder's files, a Parquet file's video column,
// its bytes or the files at its paths):
// {"video": the file's bytes as they are, "label": its class index (int64)}, the layout of a
// dataset written with those fields, so that a source operation (decode_clip) reads any of them
// alike. The bytes are not parsed here: a video that does not open is the operation's error,
// named by the source's record. Stateless, but for UnitVideoRecords (one unit's read, on one
// thread).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/store/import/unit_records.h"
#include "stoker/store/schema.h"
#include "stoker/util/byte_span.h"

namespace stoker {

// The fields' positions in video_record_schema().
inline constexpr int kVideoRecordVideo = 0;
inline constexpr int kVideoRecordLabel = 1;

// Videos larger than this are bad records, unread: it bounds the memory a unit holds.
constexpr uint64_t kMaxVideoFileBytes = uint64_t{2} << 30;

Schema video_record_schema();

// The position of `schema`'s field "video" of encoded bytes (a dataset of videos: this layout's,
// or one written with it), or -1.
int video_field(const Schema& schema);

// Manifest::sample_parts (SourceContext::sample_parts) for each video giving `k` samples where
// its records are not its clips (the "per_record" order's): video/clips_per_video.h's text.
std::string clips_per_video_parts(int64_t k);

// The record of `video` (at most kMaxVideoFileBytes) and `label` in video_record_schema().
std::vector<uint8_t> encode_video_record(const Schema& schema, ByteSpan video, int64_t label);

// The video records of one unit of a table (unit_records.h), a row at a time.
class UnitVideoRecords : public UnitRecords {
 public:
  // A unit of `rows` rows whose first is record `first` of the dataset, in
  // video_record_schema() `schema` (which must outlive this).
  UnitVideoRecords(const Schema& schema, uint64_t first, int64_t rows,
                   std::map<uint64_t, std::string>& bad);
  // Appends the record of a row of label `label` and video `video` (nullopt where null), or
  // where it is null of the file at `path` (a Hugging Face Video struct's, in `folder`:
  // image_table_rows.h's table_file_at_path): bad where the label is null, the video null and
  // the path too, its file unread, or the video larger than kMaxVideoFileBytes.
  void add(std::optional<int64_t> label, std::optional<std::string_view> video,
           std::optional<std::string_view> path = std::nullopt, const std::string& folder = "");
};

}  // namespace stoker
