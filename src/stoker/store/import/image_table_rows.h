#pragma once
// A row of a table of images as an image record (store/image_record.h): what the Parquet and
// Arrow sources share (store/import/parquet_source.h, arrow_source.h). Two layouts: Hugging Face
// datasets' (an Image struct of `bytes` and `path`, a ClassLabel label whose names are in the
// schema's `huggingface` metadata) and Spark's (a binary column and an integer one). A row's
// image is its bytes, or where they are null the file at its path (image_at_path in the .cc); a
// row that gives no image record is a reason, one line. Stateless, but for UnitImageRecords (one
// unit's read, on one thread).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/store/image_record.h"
#include "stoker/store/shard_reader.h"

namespace stoker {

// The most rows a unit of a table (a Parquet row group, an Arrow record batch) may have: a unit's
// records are built in memory, and a damaged file may claim any number (Spark's and Hugging
// Face's image units hold thousands).
constexpr int64_t kMaxRowsPerUnit = int64_t{1} << 20;

// How images are to be as Hugging Face datasets' Image feature decodes them with PIL (applying an
// EXIF orientation; in the file's own mode unless the feature names one), where stoker decodes
// RGB and applies none: an image stoker would give otherwise is a bad record, named.
enum class PilDecode {
  kNone,  // stoker's decode: no check
  kRgb,   // Image(mode="RGB"): an image with an EXIF orientation is a bad record
  kOwn,   // Image(): so is an image PIL opens in a mode other than RGB (not 3 samples a pixel)
};

struct ImageRowOptions {
  // The folder of images' relative paths, absolute; "" where none are read (a remote file's).
  std::string folder;
  int64_t max_pixels = image::kDefaultMaxPixels;  // larger images are bad records
  PilDecode pil = PilDecode::kNone;
};

// A row as read from its table: the label, the image's bytes and path, each nullopt where null
// (the path also where the table has none, or it is not read).
struct ImageRow {
  std::optional<int64_t> label;
  std::optional<std::string_view> image;
  std::optional<std::string_view> path;
};

// The record values of `row` into `values` (its image's bytes `row.image`'s, or `from_file`'s,
// where they are read from its path), or why the row is a bad record (its label set all the
// same).
std::optional<std::string> image_row_values(const ImageRow& row, const ImageRowOptions& options,
                                            ImageRecordValues& values, std::string& from_file);

// The most bytes a unit's records may hold. A file whose values decode to far more than it
// holds (a decompression bomb: one large image repeated by a dictionary, or compressed many
// times over) or a row group too large to read at once meets it: its rows from there are bad.
inline constexpr uint64_t kMaxUnitRecordBytes = uint64_t{1} << 30;

// The image records of one unit of a table (UnitReadSource::read_unit's), its rows added in
// order: a bad row's reason kept in `bad` by its global index. Records beyond
// kMaxUnitRecordBytes are refused: that row and the rest are bad, full() turns true, and
// add() does nothing more.
class UnitImageRecords {
 public:
  // A unit of `rows` rows whose first is record `first` of the dataset, in the image record
  // schema `schema` (which must outlive this).
  UnitImageRecords(const Schema& schema, uint64_t first, int64_t rows,
                   std::map<uint64_t, std::string>& bad);
  // Appends the record of `row` (image_row_values), bad where it gives none.
  void add(const ImageRow& row, const ImageRowOptions& options);
  // Appends the rows not added yet, each bad for `reason`.
  void fail_rest(const std::string& reason);
  // Whether every row is added (the rest failed): the caller need not make more rows.
  bool full() const { return static_cast<int64_t>(records_.size()) >= rows_; }
  // The unit's records, as a reader named `name`.
  ShardReader reader(const std::string& name) const;

 private:
  void append(const ImageRecordValues& values, std::optional<std::string> reason);

  const Schema& schema_;
  ImageRecordFields fields_;
  uint64_t first_;
  int64_t rows_;
  std::map<uint64_t, std::string>& bad_;
  std::vector<std::vector<uint8_t>> records_;
  uint64_t bytes_ = 0;  // of records_
};

// The class names of Hugging Face's ClassLabel feature `label` in `metadata`, the JSON of a
// schema's `huggingface` metadata; none where it names none.
std::vector<std::string> hugging_face_class_names(const std::string& metadata,
                                                  const std::string& label);

// Arrow's message `what` on one line: its lines joined by "; ", blank ones dropped.
std::string arrow_message(const char* what);

// The folder of a local file `name`'s relative image paths: its folder, absolute (as given if
// there is no working directory); "" for a URL.
std::string image_folder_of(const std::string& name);

}  // namespace stoker
