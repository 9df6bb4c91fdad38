#include "stoker/store/import/parquet_source.h"

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>
#include <parquet/api/reader.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "stoker/store/image_record.h"
#include "stoker/store/import/data_files.h"
#include "stoker/store/import/image_table_rows.h"
#include "stoker/store/import/video_record.h"
#include "stoker/store/shard_schedule.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/saved_form.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

// kCorrupt: file `name` is not a Parquet file stoker reads, for `why`.
Status not_parquet(const std::string& name, const std::string& why) {
  return corrupt(fmt::format("{}: not a Parquet file stoker reads: {}", name, why));
}

// The footer of file `i` of `files`, `size` bytes long, read by range: the last 8 bytes (the
// footer's length, little-endian, and "PAR1"), then the footer's bytes.
Result<std::string> read_footer(const InPlaceFiles& files, size_t i, uint64_t size) {
  const std::string& name = files.names()[i];
  auto refused = [&](const std::string& why) { return not_parquet(name, why); };
  constexpr uint64_t kEnds = 12;  // "PAR1" at its start, the length and "PAR1" at its end
  if (size < kEnds) return refused(fmt::format("{} bytes, fewer than any Parquet file", size));
  STOKER_ASSIGN_OR_RETURN(std::string tail, files.read_ranges({i, "its end", {{size - 8, 8}}}));
  if (tail.compare(4, 4, "PAR1") != 0)
    return refused(tail.compare(4, 4, "PARE") == 0 ? "its footer is encrypted"
                                                   : "it does not end in PAR1");
  uint32_t length = 0;
  for (int k = 3; k >= 0; --k) length = (length << 8) | static_cast<uint8_t>(tail[k]);
  if (length == 0 || length > size - kEnds)
    return refused(fmt::format("a footer of {} bytes in a file of {}", length, size));
  return files.read_ranges({i, "its footer", {{size - 8 - length, length}}});
}

constexpr char kFooterMagic[8] = {'S', 'T', 'K', 'P', 'Q', 'F', 'T', '1'};

// File `i`'s footer (read_footer), kept in `cache_dir` when given (a remote file's: its HEAD
// then tells whether it changed), as a saved form of the file's identity and the footer, keyed
// by the file's key: a later open whose file has the same identity reads it there.
Result<std::string> footer_of(const InPlaceFiles& files, size_t i, const FileIdentity& identity,
                              const std::string& cache_dir) {
  if (cache_dir.empty()) return read_footer(files, i, identity.size);
  const std::string saved =
      fmt::format("{}/{}/{}.footer", cache_dir, kParquetFooterFolder, files.key(i));
  if (Result<std::string> bytes = read_file(saved, identity.size + 64); bytes.is_ok()) {
    const std::optional<ByteSpan> body =
        unseal({reinterpret_cast<const uint8_t*>(bytes.value().data()), bytes.value().size()},
               kFooterMagic);
    uint64_t size = 0, stamp = 0;
    std::string footer;
    if (body) {
      SavedReader in(*body);
      if (in.u64(size) && in.u64(stamp) && in.text(footer) && in.done() && size == identity.size &&
          static_cast<int64_t>(stamp) == identity.stamp)
        return footer;
    }
  }
  STOKER_ASSIGN_OR_RETURN(std::string footer, read_footer(files, i, identity.size));
  std::string body;
  put_u64(body, identity.size);
  put_u64(body, static_cast<uint64_t>(identity.stamp));
  put_text(body, footer);
  save_cache_file(saved, seal(kFooterMagic, body));
  return footer;
}

// The metadata of file `name` from its footer's bytes.
Result<std::shared_ptr<parquet::FileMetaData>> parse_footer(const std::string& name,
                                                            const std::string& footer) {
  try {
    return parquet::FileMetaData::Make(footer.data(), static_cast<int64_t>(footer.size()));
  } catch (const std::exception& e) {
    return not_parquet(name, arrow_message(e.what()));
  }
}

// The bytes of column chunk `leaf` of row group `g`, as Arrow's file reader finds them: from its
// dictionary page (if any) for its compressed size, and up to 100 bytes more for a file of a
// writer before PARQUET-816's fix; one line naming the file and row group when outside the file.
Result<FileRange> chunk_range(const std::string& name, const parquet::FileMetaData& meta, int g,
                              int leaf, uint64_t size) {
  std::unique_ptr<parquet::ColumnChunkMetaData> chunk;
  try {
    chunk = meta.RowGroup(g)->ColumnChunk(leaf);
  } catch (const std::exception& e) {
    return corrupt(fmt::format("{}: row group {}: {}", name, g, arrow_message(e.what())));
  }
  int64_t start = chunk->data_page_offset();
  if (chunk->has_dictionary_page() && chunk->dictionary_page_offset() > 0 &&
      chunk->dictionary_page_offset() < start)
    start = chunk->dictionary_page_offset();
  const int64_t length = chunk->total_compressed_size();
  const auto file_size = static_cast<int64_t>(size);
  if (start < 0 || length <= 0 || start > file_size || length > file_size - start)
    return corrupt(
        fmt::format("{}: row group {}: column '{}' at bytes [{}, {}), outside the file's {}", name,
                    g, chunk->path_in_schema()->ToDotString(), start, start + length, size));
  constexpr int64_t kMaxDictionaryHeader = 100;
  int64_t padding = 0;
  if (meta.writer_version().VersionLt(parquet::ApplicationVersion::PARQUET_816_FIXED_VERSION()))
    padding = std::min(kMaxDictionaryHeader, file_size - start - length);
  return FileRange{static_cast<uint64_t>(start), static_cast<uint64_t>(length + padding)};
}

// The leaf column of `path` ("a" or "a.b") in `schema`, or -1.
int find_leaf(const parquet::SchemaDescriptor& schema, const std::string& path) {
  for (int i = 0; i < schema.num_columns(); ++i)
    if (schema.Column(i)->path()->ToDotString() == path) return i;
  return -1;
}

// The columns' paths for an error: one line, at most 32 named.
std::string column_names(const parquet::SchemaDescriptor& schema) {
  std::vector<std::string> names;
  for (int i = 0; i < schema.num_columns(); ++i)
    names.push_back(schema.Column(i)->path()->ToDotString());
  return printable_list(names, 32);
}

// Leaf `leaf` is a plain (not repeated) column of one of `types`; else the one-line error.
Status check_leaf(const std::string& file, const parquet::SchemaDescriptor& schema, int leaf,
                  std::initializer_list<parquet::Type::type> types, const char* wanted) {
  const parquet::ColumnDescriptor* column = schema.Column(leaf);
  const std::string name = column->path()->ToDotString();
  if (column->max_repetition_level() > 0)
    return invalid_argument(fmt::format("{}: column '{}' is a list, not {}", file, name, wanted));
  if (std::find(types.begin(), types.end(), column->physical_type()) == types.end())
    return invalid_argument(fmt::format("{}: column '{}' is {}, not {}", file, name,
                                        parquet::TypeToString(column->physical_type()), wanted));
  return Status::ok();
}

// The class names of Hugging Face's ClassLabel feature `label` in the schema's metadata, or none.
std::vector<std::string> parquet_class_names(const parquet::FileMetaData& meta,
                                             const std::string& label) {
  const auto& metadata = meta.key_value_metadata();
  if (!metadata) return {};
  auto text = metadata->Get("huggingface");
  return text.ok() ? hugging_face_class_names(*text, label) : std::vector<std::string>{};
}

// visit(row, value) for each of the `rows` values of `column`, in order; a null value is
// nullptr. Throws parquet::ParquetException on bad data.
template <typename DType, typename Visit>
void for_each_value(const std::shared_ptr<parquet::ColumnReader>& column, int64_t rows,
                    Visit&& visit) {
  auto reader = std::static_pointer_cast<parquet::TypedColumnReader<DType>>(column);
  const int16_t max_def = column->descr()->max_definition_level();
  constexpr int64_t kBatch = 256;
  std::vector<int16_t> levels(kBatch);
  std::vector<typename DType::c_type> values(kBatch);
  for (int64_t row = 0; row < rows;) {
    int64_t read = 0;
    const int64_t n = reader->ReadBatch(std::min(kBatch, rows - row), levels.data(), nullptr,
                                        values.data(), &read);
    if (n <= 0) throw std::runtime_error("the row group ends before its rows do");
    for (int64_t i = 0, v = 0; i < n; ++i, ++row)
      visit(row, levels[i] == max_def ? &values[v++] : nullptr);
  }
}

// Whether column chunk `leaf` of row group `g` may hold nulls: its statistics' null count is not
// 0, or it has none.
bool may_hold_nulls(const parquet::FileMetaData& meta, int g, int leaf) {
  try {
    const std::unique_ptr<parquet::ColumnChunkMetaData> chunk = meta.RowGroup(g)->ColumnChunk(leaf);
    if (!chunk->is_stats_set()) return true;
    const std::shared_ptr<parquet::Statistics> stats = chunk->statistics();
    return !stats || !stats->HasNullCount() || stats->null_count() > 0;
  } catch (const std::exception&) {
    return true;
  }
}

}  // namespace

Result<std::shared_ptr<ParquetSource>> ParquetSource::open(const std::string& path,
                                                           const ParquetSourceOptions& options) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> paths, list_data_files(path, ".parquet"));
  return open(local_files(std::move(paths)), path, options);
}

Result<std::shared_ptr<ParquetSource>> ParquetSource::open(
    std::shared_ptr<const InPlaceFiles> files, const std::string& path,
    const ParquetSourceOptions& options) {
  std::shared_ptr<ParquetSource> source(new ParquetSource());
  source->path_ = path;
  source->options_ = options;
  source->in_place_ = files;
  const bool videos = !options.video_column.empty();
  const std::string& column = videos ? options.video_column : options.image_column;
  Manifest manifest;
  manifest.schema = videos ? video_record_schema() : image_record_schema();
  manifest.source = path;
  const std::string base = std::filesystem::is_directory(path) ? path + "/" : std::string();
  for (size_t i = 0; i < files->names().size(); ++i) {
    const std::string& name = files->names()[i];
    File file;
    file.path = name;
    STOKER_ASSIGN_OR_RETURN(file.identity, files->identity(i));
    STOKER_ASSIGN_OR_RETURN(std::string footer,
                            footer_of(*files, i, file.identity, options.footer_cache_dir));
    STOKER_ASSIGN_OR_RETURN(file.meta, parse_footer(name, footer));
    const parquet::FileMetaData* meta = file.meta.get();
    const parquet::SchemaDescriptor& schema = *meta->schema();
    file.bytes_leaf = find_leaf(schema, column);
    if (file.bytes_leaf < 0) {
      // Hugging Face's Image (or Video) struct: its bytes, and its path where they are null.
      file.bytes_leaf = find_leaf(schema, column + ".bytes");
      const int path_leaf = find_leaf(schema, column + ".path");
      if (file.bytes_leaf >= 0 && path_leaf >= 0 &&
          check_leaf(name, schema, path_leaf, {parquet::Type::BYTE_ARRAY}, "a string").is_ok())
        file.path_leaf = path_leaf;
    }
    file.folder = image_folder_of(name);
    file.label_leaf = find_leaf(schema, options.label_column);
    for (const auto& [leaf, wanted] :
         {std::pair{file.bytes_leaf, &column}, {file.label_leaf, &options.label_column}})
      if (leaf < 0)
        return invalid_argument(fmt::format("{}: no column '{}' (its columns: {})", name, *wanted,
                                            column_names(schema)));
    STOKER_RETURN_IF_ERROR(
        check_leaf(name, schema, file.bytes_leaf, {parquet::Type::BYTE_ARRAY},
                   videos ? "binary (the video's bytes)" : "binary (the image's bytes)"));
    STOKER_RETURN_IF_ERROR(check_leaf(name, schema, file.label_leaf,
                                      {parquet::Type::INT32, parquet::Type::INT64},
                                      "an integer (the label)"));
    if (manifest.class_names.empty())
      manifest.class_names = parquet_class_names(*meta, options.label_column);
    uint64_t row = 0;
    for (int g = 0; g < meta->num_row_groups(); ++g) {
      const std::unique_ptr<parquet::RowGroupMetaData> group = meta->RowGroup(g);
      if (group->num_rows() < 0 || group->num_rows() > kMaxRowsPerUnit)
        return corrupt(fmt::format("{}: row group {} has {} rows, not 0 to {}", name, g,
                                   group->num_rows(), kMaxRowsPerUnit));
      // Its columns' chunks: the image's (or video's), the label's, and their paths where the
      // bytes may be null.
      FilePiece piece{i, fmt::format("row group {}", g), {}};
      const bool paths = file.path_leaf >= 0 && may_hold_nulls(*meta, g, file.bytes_leaf);
      for (int leaf : {file.bytes_leaf, file.label_leaf, paths ? file.path_leaf : -1}) {
        if (leaf < 0) continue;
        STOKER_ASSIGN_OR_RETURN(FileRange range,
                                chunk_range(name, *meta, g, leaf, file.identity.size));
        piece.ranges.push_back(range);
      }
      source->pieces_.push_back(std::move(piece));
      ShardInfo unit;
      unit.file = fmt::format("{}#{}", name.substr(name.rfind(base, 0) == 0 ? base.size() : 0), g);
      unit.records = static_cast<uint64_t>(group->num_rows());
      unit.bytes = static_cast<uint64_t>(group->total_byte_size());
      source->groups_.push_back(
          {static_cast<int>(source->files_.size()), g, row, manifest.records, paths});
      row += unit.records;
      manifest.records += unit.records;
      manifest.shards.push_back(std::move(unit));
    }
    source->files_.push_back(std::move(file));
  }
  STOKER_RETURN_IF_ERROR(files->declare_pieces(source->pieces_));
  source->set_manifest(std::move(manifest));
  source->set_units_ahead(options.row_groups_ahead);
  return source;
}

void ParquetSource::units_ahead(const std::vector<int>& units) {
  // A unit is a piece.
  in_place_->fetch_pieces_ahead(std::vector<size_t>(units.begin(), units.end()));
}

void ParquetSource::reads_planned(std::function<int64_t(int unit)> next_read, int64_t position) {
  // A unit is a piece.
  in_place_->plan([next_read = std::move(next_read)](
                      size_t piece) { return next_read(static_cast<int>(piece)); },
                  position);
}

Result<std::vector<FileStamp>> ParquetSource::file_stamps() const {
  std::vector<FileStamp> stamps;
  for (const File& file : files_)
    stamps.push_back({file.path, file.identity.size, file.identity.stamp});
  return stamps;
}

std::string ParquetSource::describe() const {
  return fmt::format("{} (Parquet: {} file{}, {} row groups, {} {}, read in place)", path_,
                     files_.size(), files_.size() == 1 ? "" : "s", groups_.size(),
                     manifest().records, options_.video_column.empty() ? "images" : "videos");
}

Result<ShardReader> ParquetSource::read_unit(int u, std::map<uint64_t, std::string>& bad,
                                             const std::function<bool()>& cancelled) const {
  const Group& unit = groups_[u];
  const File& file = files_[unit.file];
  const int64_t rows = static_cast<int64_t>(manifest().shards[u].records);
  // The rows' records: images', or videos' where a video column is read.
  std::optional<UnitImageRecords> images;
  std::optional<UnitVideoRecords> videos;
  UnitRecords& records =
      options_.video_column.empty()
          ? static_cast<UnitRecords&>(images.emplace(manifest().schema, unit.first, rows, bad))
          : videos.emplace(manifest().schema, unit.first, rows, bad);
  // A local file changed since it was opened gives bad records; a piece that cannot be read (a
  // range refused; a remote file changed: its ranges are fetched only while it keeps its ETag)
  // is acquire's error.
  Result<FileIdentity> now = in_place_->identity(static_cast<size_t>(unit.file));
  const bool same = now.is_ok() && now.value() == file.identity;
  std::shared_ptr<arrow::Buffer> bytes;
  if (same) {
    STOKER_ASSIGN_OR_RETURN(std::string piece, in_place_->read_piece(u, pieces_[u], cancelled));
    bytes = arrow::Buffer::FromString(std::move(piece));
  }
  // The reader of column `leaf`, its chunk at `at` of the piece's bytes.
  auto column = [&](int leaf, uint64_t at, uint64_t size) {
    const parquet::ColumnDescriptor* descr = file.meta->schema()->Column(leaf);
    const std::unique_ptr<parquet::ColumnChunkMetaData> chunk =
        file.meta->RowGroup(unit.row_group)->ColumnChunk(leaf);
    auto stream = std::make_shared<arrow::io::BufferReader>(
        arrow::SliceBuffer(bytes, static_cast<int64_t>(at), static_cast<int64_t>(size)));
    return parquet::ColumnReader::Make(
        descr,
        parquet::PageReader::Open(std::move(stream), chunk->num_values(), chunk->compression(),
                                  parquet::default_reader_properties(), *descr));
  };
  try {
    if (!now.is_ok()) throw std::runtime_error(now.status().message());
    if (!same)
      throw std::runtime_error("the file changed since it was opened (its size, time or ETag)");
    const FileRange& image_range = pieces_[u].ranges[0];
    const FileRange& label_range = pieces_[u].ranges[1];
    std::vector<std::optional<int64_t>> labels(rows);
    auto keep_label = [&](int64_t row, const auto* value) {
      if (value) labels[row] = *value;
    };
    const auto labels_column = column(file.label_leaf, image_range.size, label_range.size);
    if (labels_column->descr()->physical_type() == parquet::Type::INT32) {
      for_each_value<parquet::Int32Type>(labels_column, rows, keep_label);
    } else {
      for_each_value<parquet::Int64Type>(labels_column, rows, keep_label);
    }
    std::vector<std::optional<std::string>> paths;  // the image's (video's) paths, where read
    if (unit.paths) {
      paths.resize(rows);
      for_each_value<parquet::ByteArrayType>(
          column(file.path_leaf, image_range.size + label_range.size, pieces_[u].ranges[2].size),
          rows, [&](int64_t row, const parquet::ByteArray* path) {
            if (path) paths[row].emplace(reinterpret_cast<const char*>(path->ptr), path->len);
          });
    }
    ImageRowOptions row_options;
    row_options.folder = file.folder;
    row_options.max_pixels = options_.max_pixels;
    for_each_value<parquet::ByteArrayType>(
        column(file.bytes_leaf, 0, image_range.size), rows,
        [&](int64_t row, const parquet::ByteArray* value) {
          if (records.full()) return;  // the rest refused: no copies of their values
          std::optional<std::string_view> data;
          if (value) data.emplace(reinterpret_cast<const char*>(value->ptr), value->len);
          if (videos) {
            videos->add(labels[row], data,
                        unit.paths && paths[row] ? std::optional<std::string_view>(*paths[row])
                                                 : std::nullopt,
                        file.folder);
            return;
          }
          ImageRow values{labels[row], data, std::nullopt};
          if (unit.paths && paths[row]) values.path = *paths[row];
          images->add(values, row_options);
        });
  } catch (const std::exception& e) {
    records.fail_rest(fmt::format("cannot read it: {}", arrow_message(e.what())));
  }
  return records.reader(manifest().shards[u].file);
}

std::string ParquetSource::row_name(int u, uint64_t global) const {
  const Group& unit = groups_[u];
  return fmt::format("{}: row {} (row group {})", files_[unit.file].path,
                     unit.first_row + (global - unit.first), unit.row_group);
}

Status ParquetSource::record_error(int unit, uint64_t /*record*/, uint64_t global,
                                   const Status& status) const {
  const std::string reason = bad_reason(global);
  return Status(status.code(), fmt::format("{}: {} (dataset record {})", row_name(unit, global),
                                           reason.empty() ? status.message() : reason, global));
}

}  // namespace stoker
