#pragma once
// ArrowSource: Arrow IPC files read in place, as a record source (store/shard_source.h) of the
// image dataset's layout (store/image_record.h): Hugging Face datasets' cache files (its
// `dataset.cache_files`, save_to_disk's `data-*.arrow`: the IPC stream format) and Arrow's file
// format (Feather v2, uncompressed or compressed), the image and label columns named by the
// options (Hugging Face's Image struct of `bytes` and `path`, or a binary column; an integer
// label, its ClassLabel names from the schema's `huggingface` metadata), a row's image as
// store/import/image_table_rows.h makes it (the Parquet source's rows). Apache Arrow's C++ IPC
// reader (the one inside pyarrow; cmake/StokerParquet.cmake) reads them.
//
// Record i is the i-th row of the files in order (a file, a folder's `*.arrow` files or a glob
// pattern's, sorted by name; several one a line). A unit (a manifest shard, FILE#BATCH) is one
// record batch. When the source opens, each file's messages are walked, the file memory-mapped
// for that only: a batch's offset, length and rows; a unit is then read by range (pread,
// store/in_place_files.h) as one piece, its message whole (the columns not read are in it too),
// its image and label columns decoded and validated (ValidateFull) before any value is used. A
// file that is not Arrow IPC, is truncated inside a message, has no schema, a missing or
// mistyped column, dictionary batches, or a batch of more than kMaxRowsPerUnit rows fails open
// in one line naming the file (and the byte of the message); a batch that cannot be read when
// its unit is (a corrupt body), a null or undecodable image, an image file that cannot be read,
// a null label, or a file changed (size and time) since it was opened give records whose image
// is empty, record_error naming the file, row and batch and why, so that the loader's on_error
// raises or skips them. Local files only. Thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/store/import/image_table_rows.h"
#include "stoker/store/in_place_files.h"
#include "stoker/store/unit_read_source.h"

namespace arrow {
class Schema;
}  // namespace arrow

namespace stoker {

struct ArrowSourceOptions {
  // The image: a binary column, or a struct whose `bytes` field is binary (Hugging Face's Image).
  std::string image_column = "image";
  std::string label_column = "label";  // an integer column
  // The folder of the images' relative paths (Hugging Face's Image struct with null bytes):
  // "" for each file's own folder.
  std::string relative_to;
  int64_t max_pixels = image::kDefaultMaxPixels;  // larger images are bad records
  PilDecode pil = PilDecode::kNone;               // images stoker would give otherwise are bad
};

class ArrowSource : public UnitReadSource {
 public:
  static Result<std::shared_ptr<ArrowSource>> open(const std::string& path,
                                                   const ArrowSourceOptions& options);

  const std::string& location() const override { return path_; }
  std::string describe() const override;
  Result<std::vector<FileStamp>> file_stamps() const override;
  Status record_error(int unit, uint64_t record, uint64_t global,
                      const Status& status) const override;

 private:
  struct File {
    std::string path;
    FileIdentity identity;  // when it was opened
    std::shared_ptr<arrow::Schema> schema;
    int image_field = -1;  // the top-level fields read
    int label_field = -1;
    std::string folder;  // its images' relative paths'
  };
  struct Batch {  // a unit: one record batch
    int file = 0;
    int index = 0;           // in its file
    uint64_t first_row = 0;  // in its file
    uint64_t first = 0;      // global index of its first record
  };
  ArrowSource() = default;
  Result<ShardReader> read_unit(int u, std::map<uint64_t, std::string>& bad,
                                const std::function<bool()>& cancelled) const override;

  std::string path_;
  ArrowSourceOptions options_;
  std::shared_ptr<const InPlaceFiles> in_place_;
  std::vector<File> files_;
  std::vector<Batch> batches_;
  std::vector<FilePiece> pieces_;  // of each unit: its message's bytes
};

}  // namespace stoker
