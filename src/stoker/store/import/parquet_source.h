#pragma once
// ParquetSource: Parquet files read in place, as a record source (store/shard_source.h) of the
// image dataset's layout (store/image_record.h), or with a video column of the video records'
// (video_record.h: decode_clip's), so that the loader and every operation read them as they read
// a converted dataset. Two layouts: Hugging Face datasets' (an `image` struct of `bytes` and
// `path`, a `label` integer column; the class names from the schema's `huggingface` metadata,
// its ClassLabel's names) and Spark's (a binary column and an integer column), the columns named
// by the options. Other columns are never read. A video column's values are the videos' bytes
// as they are, unparsed (a video that does not open is decode_clip's error, named by its row),
// or where its struct's are null the file at its `path`, as an image's below (a null video
// without a path is a bad record). Apache Arrow's C++ Parquet reader
// (the one inside pyarrow; cmake/StokerParquet.cmake) reads them.
//
// Record i is the i-th row of the files in order (store/import/data_files.h: a file, a
// folder's `*.parquet` files or a glob pattern's, sorted by name; or remote files,
// access/remote_files.h). Every file is read by range (store/in_place_files.h): its footer when
// the source opens (the last 8 bytes, then the footer), and a unit of reading (a manifest shard:
// one row group, named FILE#GROUP, read on demand, store/unit_read_source.h) as one piece, its
// two column chunks (a remote file's kept in the shard cache, given up by the loader's next
// read). Its two columns only: the image bytes as they are (a JPEG is not transcoded), the height
// and width from their header. Hugging Face's Image struct made from image files (cast from
// paths, then to_parquet) has null `bytes` and a `path`: such a row's image is the file at its
// path, an absolute one as it is, a relative one in the Parquet file's folder
// (store/import/image_table_rows.h; a remote Parquet file's relative paths and URLs are not read).
// The struct's `path` column is read only in row groups whose `bytes` may be null (its statistics'
// null count). The image files are not part of the source's identity: each is read as it is when
// its row is. A null or undecodable image, an image file that cannot be read, a null label, a
// corrupt page, or a local file changed (size and time) since it was opened give records whose
// image is empty; record_error names the file, row and row group and why, so the loader's on_error
// raises or skips them. A piece that cannot be read (a remote file changed: its ETag; a range
// refused) is acquire's error, one line naming the file and row group. A path that holds no Parquet
// file, a file that is not Parquet (or whose footer is encrypted), a column chunk outside the file,
// or a missing or mistyped column fails open in one line naming the file, as does a row group of
// more than 2^20 rows (a unit is built in memory). Thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/store/in_place_files.h"
#include "stoker/store/unit_read_source.h"

namespace parquet {
class FileMetaData;
}  // namespace parquet

namespace stoker {

struct ParquetSourceOptions {
  // The image: a binary column, or a struct whose `bytes` field is binary (Hugging Face's Image).
  std::string image_column = "image";
  // "": images; else the videos' column, read instead of the image's: a binary column, or a
  // struct whose `bytes` field is binary (Hugging Face's Video; its `path` where they are null).
  std::string video_column;
  std::string label_column = "label";             // an integer column
  int64_t max_pixels = image::kDefaultMaxPixels;  // larger images are bad records
  int row_groups_ahead = 0;      // remote files' row groups fetched ahead of the reader (0: none)
  std::string footer_cache_dir;  // each file's footer kept here between runs ("": read each open)
};

class ParquetSource : public UnitReadSource {
 public:
  static Result<std::shared_ptr<ParquetSource>> open(const std::string& path,
                                                     const ParquetSourceOptions& options);
  // The Parquet files of `files`; `location` names them all (the spec, its URLs redacted).
  static Result<std::shared_ptr<ParquetSource>> open(std::shared_ptr<const InPlaceFiles> files,
                                                     const std::string& location,
                                                     const ParquetSourceOptions& options);

  const std::string& location() const override { return path_; }
  std::string describe() const override;
  // Each file's name and identity when the source was opened.
  Result<std::vector<FileStamp>> file_stamps() const override;
  Status record_error(int unit, uint64_t record, uint64_t global,
                      const Status& status) const override;

 private:
  struct File {
    std::string path;                             // or redacted URL
    FileIdentity identity;                        // when it was opened
    std::shared_ptr<parquet::FileMetaData> meta;  // its footer's
    int bytes_leaf = -1;  // the leaf columns read: the image's (or video's) bytes, the label
    int label_leaf = -1;
    int path_leaf = -1;  // the image (video) struct's path (a string), or -1
    std::string folder;  // a local file's folder, absolute (its files' relative paths'); or ""
  };
  struct Group {  // a unit: one row group
    int file = 0;
    int row_group = 0;
    uint64_t first_row = 0;  // in its file
    uint64_t first = 0;      // global index of its first record
    bool paths = false;      // its path column read too (its piece's third range)
  };
  ParquetSource() = default;
  Result<ShardReader> read_unit(int u, std::map<uint64_t, std::string>& bad,
                                const std::function<bool()>& cancelled) const override;
  void units_ahead(const std::vector<int>& units) override;
  void reads_planned(std::function<int64_t(int unit)> next_read, int64_t position) override;
  // "FILE: row R (row group G)" of global record `global` in unit u.
  std::string row_name(int u, uint64_t global) const;

  std::string path_;
  ParquetSourceOptions options_;
  std::shared_ptr<const InPlaceFiles> in_place_;
  std::vector<File> files_;
  std::vector<Group> groups_;
  // Of each unit: its image's (video's) and its label's column chunks, and its path's if it reads
  // it.
  std::vector<FilePiece> pieces_;
};

}  // namespace stoker
