#include "stoker/store/import/arrow_source.h"

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

#include "stoker/store/image_record.h"
#include "stoker/store/import/data_files.h"

namespace stoker {
namespace {

// kCorrupt: file `name` is not an Arrow IPC file stoker reads, for `why`.
Status not_arrow(const std::string& name, const std::string& why) {
  return corrupt(fmt::format("{}: not an Arrow file stoker reads: {}", name, why));
}

bool holds_bytes(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::BINARY:
    case arrow::Type::STRING:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::LARGE_STRING:
      return true;
    default:
      return false;
  }
}

bool holds_label(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
    case arrow::Type::UINT32:
      return true;
    default:
      return false;
  }
}

// Row `i` of an integer column of holds_label's types, or nullopt where null.
std::optional<int64_t> integer_at(const arrow::Array& column, int64_t i) {
  if (column.IsNull(i)) return std::nullopt;
  switch (column.type_id()) {
    case arrow::Type::INT8:
      return static_cast<const arrow::Int8Array&>(column).Value(i);
    case arrow::Type::INT16:
      return static_cast<const arrow::Int16Array&>(column).Value(i);
    case arrow::Type::INT32:
      return static_cast<const arrow::Int32Array&>(column).Value(i);
    case arrow::Type::UINT8:
      return static_cast<const arrow::UInt8Array&>(column).Value(i);
    case arrow::Type::UINT16:
      return static_cast<const arrow::UInt16Array&>(column).Value(i);
    case arrow::Type::UINT32:
      return static_cast<const arrow::UInt32Array&>(column).Value(i);
    default:
      return static_cast<const arrow::Int64Array&>(column).Value(i);
  }
}

// Row `i` of a column of holds_bytes's types (null: a column not read), or nullopt where null.
std::optional<std::string_view> bytes_at(const arrow::Array* column, int64_t i) {
  if (!column || column->IsNull(i)) return std::nullopt;
  const arrow::Type::type id = column->type_id();
  if (id == arrow::Type::BINARY || id == arrow::Type::STRING)
    return static_cast<const arrow::BinaryArray&>(*column).GetView(i);
  return static_cast<const arrow::LargeBinaryArray&>(*column).GetView(i);
}

// The field of struct `type` named `name`, or null.
std::shared_ptr<arrow::Field> struct_field(const arrow::DataType& type, const std::string& name) {
  return type.id() == arrow::Type::STRUCT
             ? static_cast<const arrow::StructType&>(type).GetFieldByName(name)
             : nullptr;
}

// Checks that the fields `options` names are in `schema` with types the source reads, and sets
// `file`'s field indices; else the one-line error naming the file.
Status find_arrow_fields(const std::string& name, const arrow::Schema& schema,
                         const ArrowSourceOptions& options, int& image, int& label) {
  std::string names;
  for (const auto& field : schema.fields()) names += (names.empty() ? "" : ", ") + field->name();
  for (const std::string* column : {&options.image_column, &options.label_column})
    if (schema.GetFieldIndex(*column) < 0)
      return invalid_argument(fmt::format("{}: no column '{}' (its columns: {})", name, *column,
                                          names.empty() ? "none" : names));
  image = schema.GetFieldIndex(options.image_column);
  label = schema.GetFieldIndex(options.label_column);
  const arrow::DataType& image_type = *schema.field(image)->type();
  const std::shared_ptr<arrow::Field> bytes = struct_field(image_type, "bytes");
  const std::shared_ptr<arrow::Field> path = struct_field(image_type, "path");
  if (!holds_bytes(image_type) &&
      !(bytes && holds_bytes(*bytes->type()) && (!path || holds_bytes(*path->type()))))
    return invalid_argument(fmt::format(
        "{}: column '{}' is {}, not binary (the image's bytes) or a struct of binary `bytes` "
        "(and string `path`: Hugging Face's Image)",
        name, options.image_column, image_type.ToString()));
  const arrow::DataType& label_type = *schema.field(label)->type();
  if (!holds_label(label_type))
    return invalid_argument(fmt::format("{}: column '{}' is {}, not an integer (the label)", name,
                                        options.label_column, label_type.ToString()));
  return Status::ok();
}

// Reading options decoding only `fields` of a batch, on the calling thread.
arrow::ipc::IpcReadOptions arrow_fields_read(std::vector<int> fields) {
  arrow::ipc::IpcReadOptions read = arrow::ipc::IpcReadOptions::Defaults();
  read.included_fields = std::move(fields);
  read.use_threads = false;
  return read;
}

// A record batch's message as the scan of its file found it.
struct ArrowMessage {
  FileRange range;  // its prefix, metadata and body
  int64_t rows = 0;
};

// The schema and record batches of the Arrow IPC file `name` (the stream format, or the file
// format: "ARROW1", then the stream), walked message by message through a memory map: a batch's
// rows from its metadata and label column (not copied). One line naming the file otherwise.
Status scan_arrow_file(const std::string& name, const ArrowSourceOptions& options,
                       std::shared_ptr<arrow::Schema>& schema, int& image, int& label,
                       std::vector<ArrowMessage>& batches) {
  auto failed = [&](const arrow::Status& status, int64_t at) {
    return not_arrow(name,
                     fmt::format("at byte {}: {}", at, arrow_message(status.message().c_str())));
  };
  arrow::Result<std::shared_ptr<arrow::io::MemoryMappedFile>> mapped =
      arrow::io::MemoryMappedFile::Open(name, arrow::io::FileMode::READ);
  if (!mapped.ok()) return failed(mapped.status(), 0);
  arrow::io::MemoryMappedFile& file = **mapped;
  arrow::Result<int64_t> size = file.GetSize();
  if (!size.ok()) return failed(size.status(), 0);
  constexpr std::string_view kFileMagic("ARROW1\0\0", 8);  // the file format's, padded
  int64_t at = 0;
  if (*size >= static_cast<int64_t>(kFileMagic.size())) {
    arrow::Result<std::shared_ptr<arrow::Buffer>> start = file.ReadAt(0, kFileMagic.size());
    if (start.ok() && std::string_view(reinterpret_cast<const char*>((*start)->data()),
                                       (*start)->size()) == kFileMagic)
      at = kFileMagic.size();
  }
  if (arrow::Status seek = file.Seek(at); !seek.ok()) return failed(seek, at);
  std::unique_ptr<arrow::ipc::MessageReader> reader = arrow::ipc::MessageReader::Open(&file);
  for (;;) {
    arrow::Result<std::unique_ptr<arrow::ipc::Message>> message = reader->ReadNextMessage();
    if (!message.ok()) return failed(message.status(), at);
    if (!*message) break;  // the end of the stream
    const arrow::Result<int64_t> end = file.Tell();
    if (!end.ok()) return failed(end.status(), at);
    const arrow::ipc::MessageType type = (*message)->type();
    if (type == arrow::ipc::MessageType::SCHEMA && !schema) {
      arrow::Result<std::shared_ptr<arrow::Schema>> read =
          arrow::ipc::ReadSchema(**message, nullptr);
      if (!read.ok()) return failed(read.status(), at);
      schema = *read;
      STOKER_RETURN_IF_ERROR(find_arrow_fields(name, *schema, options, image, label));
    } else if (type == arrow::ipc::MessageType::RECORD_BATCH && schema) {
      arrow::Result<std::shared_ptr<arrow::RecordBatch>> batch =
          arrow::ipc::ReadRecordBatch(**message, schema, nullptr, arrow_fields_read({label}));
      if (!batch.ok()) return failed(batch.status(), at);
      const int64_t rows = (*batch)->num_rows();
      if (rows < 0 || rows > kMaxRowsPerUnit)
        return not_arrow(name, fmt::format("at byte {}: a record batch of {} rows, not 0 to {}", at,
                                           rows, kMaxRowsPerUnit));
      batches.push_back({{static_cast<uint64_t>(at), static_cast<uint64_t>(*end - at)}, rows});
    } else {
      return not_arrow(
          name, fmt::format("at byte {}: a {} message{}", at, arrow::ipc::FormatMessageType(type),
                            type == arrow::ipc::MessageType::DICTIONARY_BATCH
                                ? " (dictionary-encoded columns are not read)"
                            : schema ? " after the schema"
                                     : " before any schema"));
    }
    at = *end;
  }
  if (!schema) return not_arrow(name, "no schema (an empty file?)");
  return Status::ok();
}

}  // namespace

Result<std::shared_ptr<ArrowSource>> ArrowSource::open(const std::string& path,
                                                       const ArrowSourceOptions& options) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> paths, list_data_files(path, ".arrow"));
  std::shared_ptr<ArrowSource> source(new ArrowSource());
  source->path_ = path;
  source->options_ = options;
  source->in_place_ = local_files(std::move(paths));
  const InPlaceFiles& files = *source->in_place_;
  Manifest manifest;
  manifest.schema = image_record_schema();
  manifest.source = path;
  const std::string base = std::filesystem::is_directory(path) ? path + "/" : std::string();
  for (size_t i = 0; i < files.names().size(); ++i) {
    const std::string& name = files.names()[i];
    File file;
    file.path = name;
    STOKER_ASSIGN_OR_RETURN(file.identity, files.identity(i));
    std::vector<ArrowMessage> batches;
    STOKER_RETURN_IF_ERROR(
        scan_arrow_file(name, options, file.schema, file.image_field, file.label_field, batches));
    file.folder = options.relative_to.empty() ? image_folder_of(name) : options.relative_to;
    if (manifest.class_names.empty() && file.schema->metadata()) {
      arrow::Result<std::string> text = file.schema->metadata()->Get("huggingface");
      if (text.ok()) manifest.class_names = hugging_face_class_names(*text, options.label_column);
    }
    uint64_t row = 0;
    for (size_t b = 0; b < batches.size(); ++b) {
      source->pieces_.push_back({i, fmt::format("record batch {}", b), {batches[b].range}});
      ShardInfo unit;
      unit.file = fmt::format("{}#{}", name.substr(name.rfind(base, 0) == 0 ? base.size() : 0), b);
      unit.records = static_cast<uint64_t>(batches[b].rows);
      unit.bytes = batches[b].range.size;
      source->batches_.push_back(
          {static_cast<int>(source->files_.size()), static_cast<int>(b), row, manifest.records});
      row += unit.records;
      manifest.records += unit.records;
      manifest.shards.push_back(std::move(unit));
    }
    source->files_.push_back(std::move(file));
  }
  source->set_manifest(std::move(manifest));
  return source;
}

Result<std::vector<FileStamp>> ArrowSource::file_stamps() const {
  std::vector<FileStamp> stamps;
  for (const File& file : files_)
    stamps.push_back({file.path, file.identity.size, file.identity.stamp});
  return stamps;
}

std::string ArrowSource::describe() const {
  return fmt::format("{} (Arrow: {} file{}, {} record batches, {} images, read in place)", path_,
                     files_.size(), files_.size() == 1 ? "" : "s", batches_.size(),
                     manifest().records);
}

Result<ShardReader> ArrowSource::read_unit(int u, std::map<uint64_t, std::string>& bad,
                                           const std::function<bool()>& cancelled) const {
  const Batch& unit = batches_[u];
  const File& file = files_[unit.file];
  const auto rows = static_cast<int64_t>(manifest().shards[u].records);
  UnitImageRecords records(manifest().schema, unit.first, rows, bad);
  // The batch's image and label columns, or why they cannot be read: the file changed since it
  // was opened, or its message does not decode.
  std::shared_ptr<arrow::RecordBatch> batch;
  std::string failure;
  Result<FileIdentity> now = in_place_->identity(static_cast<size_t>(unit.file));
  if (!now.is_ok()) {
    failure = now.status().message();
  } else if (now.value() != file.identity) {
    failure = "the file changed since it was opened (its size or time)";
  } else {
    STOKER_ASSIGN_OR_RETURN(std::string piece, in_place_->read_piece(u, pieces_[u], cancelled));
    arrow::io::BufferReader stream(arrow::Buffer::FromString(std::move(piece)));
    arrow::Result<std::unique_ptr<arrow::ipc::Message>> message = arrow::ipc::ReadMessage(&stream);
    arrow::Result<std::shared_ptr<arrow::RecordBatch>> read =
        !message.ok() ? arrow::Result<std::shared_ptr<arrow::RecordBatch>>(message.status())
        : !*message
            ? arrow::Status::Invalid("no message")
            : arrow::ipc::ReadRecordBatch(**message, file.schema, nullptr,
                                          arrow_fields_read({file.image_field, file.label_field}));
    arrow::Status valid = read.ok() ? (*read)->ValidateFull() : read.status();
    if (valid.ok() && (*read)->num_rows() != rows)
      valid = arrow::Status::Invalid(
          fmt::format("{} rows, where it had {}", (*read)->num_rows(), rows));
    if (valid.ok()) {
      batch = *read;
    } else {
      failure = "cannot read it: " + arrow_message(valid.message().c_str());
    }
  }
  if (!batch) {
    records.fail_rest(failure);
    return records.reader(manifest().shards[u].file);
  }
  const arrow::Schema& read_schema = *batch->schema();
  const arrow::Array& labels = *batch->column(read_schema.GetFieldIndex(options_.label_column));
  const std::shared_ptr<arrow::Array> image =
      batch->column(read_schema.GetFieldIndex(options_.image_column));
  // The image's bytes and path columns (a struct's null rows are null in both).
  const arrow::Array* bytes = image.get();
  const arrow::Array* paths = nullptr;
  std::shared_ptr<arrow::Array> struct_bytes, struct_paths;
  if (image->type_id() == arrow::Type::STRUCT) {
    const auto& images = static_cast<const arrow::StructArray&>(*image);
    struct_bytes = images.GetFieldByName("bytes");
    struct_paths = images.GetFieldByName("path");
    bytes = struct_bytes.get();
    paths = struct_paths.get();
  }
  ImageRowOptions row_options;
  row_options.folder = file.folder;
  row_options.max_pixels = options_.max_pixels;
  row_options.pil = options_.pil;
  for (int64_t row = 0; row < rows && !records.full(); ++row) {
    const bool null_image = image->IsNull(row);
    records.add({integer_at(labels, row), null_image ? std::nullopt : bytes_at(bytes, row),
                 null_image ? std::nullopt : bytes_at(paths, row)},
                row_options);
  }
  return records.reader(manifest().shards[u].file);
}

Status ArrowSource::record_error(int unit, uint64_t /*record*/, uint64_t global,
                                 const Status& status) const {
  const Batch& batch = batches_[unit];
  const std::string reason = bad_reason(global);
  return Status(status.code(),
                fmt::format("{}: row {} (record batch {}): {} (dataset record {})",
                            files_[batch.file].path, batch.first_row + (global - batch.first),
                            batch.index, reason.empty() ? status.message() : reason, global));
}

}  // namespace stoker
