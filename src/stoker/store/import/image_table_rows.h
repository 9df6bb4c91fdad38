#pragma once
// A row of a table of images as an image record (store/image_record.h): what the Parquet and
// Arrow sources share (store/import/parquet_source.h, arrow_source.h). Two layouts: Hugging Face
// datasets' (an Image struct of `bytes` and `path`, a ClassLabel label whose names are in the
// schema's `huggingface` metadata) and Spark's (a binary column and an integer one). A row's
// image is its bytes, or where they are null the file at its path (table_file_at_path); a
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
#include "stoker/store/import/unit_records.h"

namespace stoker {

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

// The image records of one unit of a table (unit_records.h), a row at a time.
class UnitImageRecords : public UnitRecords {
 public:
  // A unit of `rows` rows whose first is record `first` of the dataset, in the image record
  // schema `schema` (which must outlive this).
  UnitImageRecords(const Schema& schema, uint64_t first, int64_t rows,
                   std::map<uint64_t, std::string>& bad);
  // Appends the record of `row` (image_row_values), bad where it gives none.
  void add(const ImageRow& row, const ImageRowOptions& options);

 private:
  ImageRecordFields fields_;
};

// The class names of Hugging Face's ClassLabel feature `label` in `metadata`, the JSON of a
// schema's `huggingface` metadata; none where it names none.
std::vector<std::string> hugging_face_class_names(const std::string& metadata,
                                                  const std::string& label);

// Arrow's message `what` on one line: its lines joined by "; ", blank ones dropped.
std::string arrow_message(const char* what);

// The bytes of the file at `path` (at most `max_bytes`), the path of a Hugging Face Image (or
// Video) struct whose bytes are null, in a table whose relative paths are in `folder` ("": a
// remote file's). An absolute path is read as it is; a relative one is relative to `folder`.
// Hugging Face datasets opens a local path as it is given (Image.decode_example:
// PIL.Image.open(path), so relative to the reading process's working directory) and a URL (a
// remote or chained "::" path) through fsspec; stoker reads a relative path in the folder it is
// given (a table file's own by default, so that a folder holding a table and its files reads the
// same from wherever it is read), and reads no URL. A relative path of a remote file (only Parquet
// files are read remotely) is not read either (it would be a remote read). One line.
Result<std::string> table_file_at_path(const std::string& folder, const std::string& path,
                                       uint64_t max_bytes);

// The folder of a local file `name`'s relative image paths: its folder, absolute (as given if
// there is no working directory); "" for a URL.
std::string image_folder_of(const std::string& name);

}  // namespace stoker
