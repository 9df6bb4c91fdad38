#include "stoker/store/import/token_column.h"

#include <arrow/array.h>
#include <arrow/io/file.h>
#include <arrow/ipc/api.h>
#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <parquet/arrow/reader.h>
#include <parquet/column_reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>
#include <parquet/statistics.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "stoker/store/import/data_files.h"
#include "stoker/store/import/image_table_rows.h"
#include "stoker/store/import/megatron_index.h"
#include "stoker/store/import/token_layout.h"
#include "stoker/store/import/unit_records.h"
#include "stoker/store/in_place_files.h"
#include "stoker/util/checksum.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The copy's format, in its STAMP: a change makes older copies stale.
constexpr uint64_t kCopyVersion = 1;
constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

// Where a chunk of rows is: its file, the file's row of its first, and its row group or batch.
struct Place {
  const std::string& file;
  uint64_t first_row = 0;
  std::string unit;  // "row group 3", "record batch 0"
  std::string row(uint64_t r) const {
    return fmt::format("{}: row {} ({})", file, first_row + r, unit);
  }
};

// The narrowest stored type that holds token ids up to `max`.
TokenType type_for(uint64_t max) {
  if (max <= token_type_max(TokenType::kUint16)) return TokenType::kUint16;
  if (max <= token_type_max(TokenType::kInt32)) return TokenType::kInt32;
  return TokenType::kInt64;
}

uint8_t megatron_code(TokenType type) {
  return type == TokenType::kUint16 ? 8 : type == TokenType::kInt32 ? 4 : 5;
}

// A file written with a buffer, kIoError naming it.
class OutFile {
 public:
  ~OutFile() { close(); }
  Status open(std::string path) {
    path_ = std::move(path);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return io_error(fmt::format("{}: {}", path_, std::strerror(errno)));
    return Status::ok();
  }
  Status append(const void* data, size_t size) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    buffer_.insert(buffer_.end(), bytes, bytes + size);
    return buffer_.size() >= (size_t{4} << 20) ? flush() : Status::ok();
  }
  Status flush() {
    for (size_t done = 0; done < buffer_.size();) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return io_error(fmt::format("{}: {}", path_, std::strerror(errno)));
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
    return Status::ok();
  }
  Status finish() {
    STOKER_RETURN_IF_ERROR(flush());
    if (::fsync(fd_) != 0) return io_error(fmt::format("{}: {}", path_, std::strerror(errno)));
    close();
    return Status::ok();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<uint8_t> buffer_;
};

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// The Megatron-LM dataset being written in folder `dir`: tokens.bin as rows come, tokens.idx at
// the end from the rows' lengths.
class CopyWriter {
 public:
  CopyWriter(std::string dir, TokenType type) : dir_(std::move(dir)), type_(type) {}

  Status open() { return bin_.open(dir_ + "/tokens.bin"); }

  // At least type `type` from now on (the tokens written so far rewritten).
  Status widen_to(TokenType type) {
    if (token_type_size(type) <= token_type_size(type_)) return Status::ok();
    STOKER_RETURN_IF_ERROR(bin_.finish());
    const std::string narrow = dir_ + "/tokens.bin";
    const std::string wide = dir_ + "/tokens.wide";
    STOKER_RETURN_IF_ERROR(bin_.open(wide));
    const int in = ::open(narrow.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return io_error(fmt::format("{}: {}", narrow, std::strerror(errno)));
    const size_t item = token_type_size(type_);
    std::vector<uint8_t> bytes((size_t{1} << 20) * item);
    std::vector<int64_t> tokens(size_t{1} << 20);
    Status status = Status::ok();
    for (ssize_t got = 0; status.is_ok();) {
      got = ::read(in, bytes.data(), bytes.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) status = io_error(fmt::format("{}: {}", narrow, std::strerror(errno)));
      if (got <= 0) break;
      const size_t n = static_cast<size_t>(got) / item;  // whole tokens: written so
      widen_tokens(type_, bytes.data(), n, tokens.data());
      status = store(tokens.data(), n, type);
    }
    ::close(in);
    STOKER_RETURN_IF_ERROR(status);
    type_ = type;
    std::error_code ec;
    fs::rename(wide, narrow, ec);
    if (ec) return io_error(fmt::format("{}: {}", narrow, ec.message()));
    return Status::ok();
  }

  // Appends the `n` token ids at `ids` (of an integer type) to the row being written (row `r`
  // of `place`), or the error of its first that is no token id, naming the row.
  template <typename T>
  Status append_ids(const T* ids, int64_t n, const Place& place, uint64_t r) {
    if (n > std::numeric_limits<int32_t>::max() - row_length_)
      return corrupt(fmt::format("{}: {} token ids or more, more than a row may hold (2^31 - 1)",
                                 place.row(r), row_length_ + n));
    uint64_t max = 0;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_signed_v<T>) {
        if (ids[i] < 0)
          return corrupt(fmt::format("{}: token id {} at {} is negative, not a token id",
                                     place.row(r), ids[i], row_length_ + i));
      } else if constexpr (sizeof(T) == 8) {
        if (ids[i] > kInt64Max)
          return corrupt(fmt::format("{}: token id {} at {} is beyond int64, not a token id",
                                     place.row(r), ids[i], row_length_ + i));
      }
      max = std::max<uint64_t>(max, static_cast<uint64_t>(ids[i]));
    }
    if (max > token_type_max(type_)) STOKER_RETURN_IF_ERROR(widen_to(type_for(max)));
    row_length_ += n;
    return store(ids, static_cast<size_t>(n), type_);
  }

  // The ids appended to the row being written.
  int64_t row_length() const { return row_length_; }

  // Ends the row being written: one document of the ids appended since the last.
  void end_row() {
    lengths_.push_back(static_cast<int32_t>(row_length_));
    row_length_ = 0;
  }

  // Appends row `r` of `place`: the `n` token ids at `ids` (append_ids).
  template <typename T>
  Status append_row(const T* ids, int64_t n, const Place& place, uint64_t r) {
    STOKER_RETURN_IF_ERROR(append_ids(ids, n, place, r));
    end_row();
    return Status::ok();
  }

  // Finishes tokens.bin and writes tokens.idx: one sequence and one document a row.
  Status finish() {
    STOKER_RETURN_IF_ERROR(bin_.finish());
    OutFile idx;
    STOKER_RETURN_IF_ERROR(idx.open(dir_ + "/tokens.idx"));
    std::string head("MMIDIDX\0\0", 9);
    put<uint64_t>(head, 1);
    put<uint8_t>(head, megatron_code(type_));
    put<uint64_t>(head, lengths_.size());
    put<uint64_t>(head, lengths_.size() + 1);
    STOKER_RETURN_IF_ERROR(idx.append(head.data(), head.size()));
    STOKER_RETURN_IF_ERROR(idx.append(lengths_.data(), lengths_.size() * sizeof(int32_t)));
    int64_t pointer = 0;
    const auto item = static_cast<int64_t>(token_type_size(type_));
    for (int32_t length : lengths_) {
      STOKER_RETURN_IF_ERROR(idx.append(&pointer, sizeof(pointer)));
      pointer += length * item;
    }
    for (int64_t d = 0; d <= static_cast<int64_t>(lengths_.size()); ++d)
      STOKER_RETURN_IF_ERROR(idx.append(&d, sizeof(d)));
    return idx.finish();
  }

 private:
  // The `n` ids at `ids` (all token ids, each within `type`) appended as `type`.
  template <typename T>
  Status store(const T* ids, size_t n, TokenType type) {
    switch (type) {
      case TokenType::kUint16:
        return store_as<uint16_t>(ids, n);
      case TokenType::kInt32:
        return store_as<int32_t>(ids, n);
      default:
        return store_as<int64_t>(ids, n);
    }
  }
  template <typename S, typename T>
  Status store_as(const T* ids, size_t n) {
    if constexpr (std::is_same_v<S, T>) {
      return bin_.append(ids, n * sizeof(S));
    } else {
      scratch_.resize(n * sizeof(S));  // new's alignment suits any S
      S* out = reinterpret_cast<S*>(scratch_.data());
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<S>(ids[i]);
      return bin_.append(scratch_.data(), scratch_.size());
    }
  }

  std::string dir_;
  TokenType type_;
  OutFile bin_;
  std::vector<int32_t> lengths_;
  int64_t row_length_ = 0;        // of the row being written
  std::vector<uint8_t> scratch_;  // ids narrowed to the stored type
};

// Why `type` is no column of token ids, or "" when it is a list of integers.
std::string not_token_lists(const arrow::DataType& type) {
  if ((type.id() == arrow::Type::LIST || type.id() == arrow::Type::LARGE_LIST) &&
      arrow::is_integer(type.field(0)->type()->id()))
    return "";
  return fmt::format("is {}, not a list of integer token ids (list<int32> or list<int64>)",
                     printable(type.ToString()));
}

// The field index of column `column` in `schema`, or the error naming file `name`.
Result<int> column_index(const std::string& name, const arrow::Schema& schema,
                         const std::string& column) {
  const int index = schema.GetFieldIndex(column);
  if (index < 0) {
    std::vector<std::string> names;
    for (const auto& field : schema.fields()) names.push_back(field->name());
    return invalid_argument(fmt::format("{}: no column '{}' (its columns: {})", name,
                                        printable(column), printable_list(names, 32)));
  }
  if (std::string why = not_token_lists(*schema.field(index)->type()); !why.empty())
    return invalid_argument(fmt::format("{}: column '{}' {}", name, printable(column), why));
  return index;
}

template <typename Offset, typename T>
Status append_lists(const arrow::Array& lists, const arrow::Array& items, const Place& place,
                    CopyWriter& out) {
  const Offset* offsets = lists.data()->GetValues<Offset>(1);
  const T* ids = items.data()->GetValues<T>(1);
  for (int64_t r = 0; r < lists.length(); ++r) {
    if (lists.IsNull(r))
      return corrupt(fmt::format("{}: a null row, not a document's token ids", place.row(r)));
    const Offset begin = offsets[r], end = offsets[r + 1];
    if (items.null_count() > 0)
      for (Offset i = begin; i < end; ++i)
        if (items.IsNull(i))
          return corrupt(fmt::format("{}: a null token id at {}", place.row(r), i - begin));
    STOKER_RETURN_IF_ERROR(out.append_row(ids + begin, end - begin, place, r));
  }
  return Status::ok();
}

template <typename Offset>
Status append_items(const arrow::Array& lists, const arrow::Array& items, const Place& place,
                    CopyWriter& out) {
  switch (items.type_id()) {
    case arrow::Type::INT8:
      return append_lists<Offset, int8_t>(lists, items, place, out);
    case arrow::Type::INT16:
      return append_lists<Offset, int16_t>(lists, items, place, out);
    case arrow::Type::INT32:
      return append_lists<Offset, int32_t>(lists, items, place, out);
    case arrow::Type::INT64:
      return append_lists<Offset, int64_t>(lists, items, place, out);
    case arrow::Type::UINT8:
      return append_lists<Offset, uint8_t>(lists, items, place, out);
    case arrow::Type::UINT16:
      return append_lists<Offset, uint16_t>(lists, items, place, out);
    case arrow::Type::UINT32:
      return append_lists<Offset, uint32_t>(lists, items, place, out);
    default:
      return append_lists<Offset, uint64_t>(lists, items, place, out);
  }
}

// Appends the rows of `lists` (of the checked column's type), after checking its buffers
// (ValidateFull: a damaged file's offsets are never followed).
Status append_array(const arrow::Array& lists, const Place& place, CopyWriter& out) {
  if (arrow::Status valid = lists.ValidateFull(); !valid.ok())
    return corrupt(fmt::format("{} ({}): damaged column data: {}", place.file, place.unit,
                               arrow_message(valid.message().c_str())));
  if (lists.type_id() == arrow::Type::LIST)
    return append_items<int32_t>(lists, *static_cast<const arrow::ListArray&>(lists).values(),
                                 place, out);
  return append_items<int64_t>(lists, *static_cast<const arrow::LargeListArray&>(lists).values(),
                               place, out);
}

// Arrow's CappedMemoryPool, remembering the largest allocation it refused for its cap (not one
// the pool it wraps failed): what the read's error then says. Arrow's reader may allocate from
// several threads (an IPC batch's bodies decompressed at once).
class RefusingPool : public arrow::CappedMemoryPool {
 public:
  RefusingPool(arrow::MemoryPool* wrapped, int64_t limit)
      : CappedMemoryPool(wrapped, limit), limit_(limit) {}
  using MemoryPool::Allocate;
  using MemoryPool::Reallocate;
  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    return noted(size, CappedMemoryPool::Allocate(size, alignment, out));
  }
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                           uint8_t** ptr) override {
    return noted(new_size - old_size,
                 CappedMemoryPool::Reallocate(old_size, new_size, alignment, ptr));
  }
  int64_t refused() const { return refused_.load(); }

 private:
  arrow::Status noted(int64_t more, arrow::Status status) {
    if (status.IsOutOfMemory() && bytes_allocated() + more > limit_) {
      int64_t seen = refused_.load();
      while (more > seen && !refused_.compare_exchange_weak(seen, more)) {
      }
    }
    return status;
  }
  const int64_t limit_;
  std::atomic<int64_t> refused_{0};
};

// The memory pool of one file's read: what Arrow allocates for it at once (a Parquet page or an
// Arrow record batch's bodies decompressed, a dictionary) refused past kMaxUnitRecordBytes,
// whatever a page header or a body's length claims, counted apart from the process's other
// Arrow allocations (CappedMemoryPool alone would count those of the pool it wraps).
struct ReadPool {
  arrow::ProxyMemoryPool counted{arrow::default_memory_pool()};
  RefusingPool capped{&counted, static_cast<int64_t>(kMaxUnitRecordBytes)};

  // The error of `unit` (of file `name`, made of `smaller`s) where the cap refused an
  // allocation of its read; nullopt where it did not.
  std::optional<Status> refusal(const std::string& name, const std::string& unit,
                                const std::string& smaller) const {
    if (capped.refused() == 0) return std::nullopt;
    return corrupt(fmt::format(
        "{}: {}: reading it takes {} bytes at once, more than the {} stoker gives one read: a "
        "decompression bomb or a damaged file (or write smaller {})",
        name, unit, capped.refused(), kMaxUnitRecordBytes, smaller));
  }
};

// The leaf column of Parquet column `column` (a list's: its only leaf), or -1 where it has none
// or several.
int column_leaf(const parquet::SchemaDescriptor& schema, const std::string& column) {
  int leaf = -1;
  for (int i = 0; i < schema.num_columns(); ++i)
    if (schema.Column(i)->path()->ToDotVector()[0] == column) {
      if (leaf >= 0) return -1;
      leaf = i;
    }
  return leaf;
}

// The largest token id every row group's statistics of Parquet leaf column `leaf` give, or
// nullopt where one lacks them (or its ids are unsigned, whose statistics are not read here).
std::optional<uint64_t> statistics_max(const parquet::FileMetaData& meta, int leaf,
                                       const arrow::DataType& items) {
  if (!arrow::is_signed_integer(items.id())) return std::nullopt;
  uint64_t max = 0;
  for (int g = 0; g < meta.num_row_groups(); ++g) {
    const std::shared_ptr<parquet::Statistics> stats =
        meta.RowGroup(g)->ColumnChunk(leaf)->statistics();
    if (!stats || !stats->HasMinMax()) return std::nullopt;
    int64_t top = 0;
    if (stats->physical_type() == parquet::Type::INT32)
      top = static_cast<const parquet::Int32Statistics&>(*stats).max();
    else if (stats->physical_type() == parquet::Type::INT64)
      top = static_cast<const parquet::Int64Statistics&>(*stats).max();
    else
      return std::nullopt;
    max = std::max<uint64_t>(max, top < 0 ? 0 : static_cast<uint64_t>(top));
  }
  return max;
}

// Parquet's token column is read by levels and values, kLevelBatch at a time, into the copy as
// they come, its column chunk from the file kBufferBytes at a time (never a row group's, or a
// row's, ids or bytes at once: Arrow's column reader would make
// arrays of them, and a few bytes of dictionary or RLE runs, or a zstd page of zeros, decode to
// billions). What one row group may decode to is bounded by what it holds in the file, not by
// what its footer or page headers say (which a damaged or hostile file makes up): the ids
// counted as they come, at most kMinUnitTokens, or kTokensPerStoredByte a byte of its column's
// chunk (its compressed size, at most the file's) where that allows more. Real token columns
// stay far below: rows of 5 ids padded to 8192 compress to about 500 ids a byte, a random
// one's to 2 to 8 bytes an id. Arrow's own allocations for it (a page decompressed, its
// dictionary) are capped at kMaxUnitRecordBytes by the pool its reader is given, whatever a
// page header claims.
constexpr uint64_t kMinUnitTokens = uint64_t{1} << 24;
constexpr uint64_t kTokensPerStoredByte = 8192;
constexpr int64_t kLevelBatch = int64_t{1} << 16;
constexpr int64_t kBufferBytes = int64_t{4} << 20;

// The definition level at which the list of Parquet leaf column `leaf` is present (an empty
// row one below, a null row lower, a null id from it up to the leaf's largest), or -1 where the
// column has not exactly one repeated node.
int list_level(const parquet::ColumnDescriptor& leaf) {
  std::vector<const parquet::schema::Node*> path;  // leaf to root, the root left out
  for (const parquet::schema::Node* node = leaf.schema_node().get(); node && node->parent();
       node = node->parent())
    path.push_back(node);
  int level = 0, list = -1, repeated = 0;
  for (auto node = path.rbegin(); node != path.rend(); ++node) {
    if (!(*node)->is_required()) ++level;
    if ((*node)->is_repeated()) list = level, ++repeated;
  }
  return repeated == 1 ? list : -1;
}

// Appends the `rows` rows of row group column `column` (of physical type DType, its ids T: a
// signed or unsigned view of its values), whose list is present at definition level `list`,
// at most `limit` ids in all (for its `stored` bytes), or the error naming the row or the row
// group.
template <typename DType, typename T>
Status decode_row_group(parquet::ColumnReader& column, int list, int64_t stored, int64_t rows,
                        const Place& at, CopyWriter& out) {
  const uint64_t limit =
      std::max(kMinUnitTokens, kTokensPerStoredByte * static_cast<uint64_t>(stored));
  static_assert(sizeof(T) == sizeof(typename DType::c_type));
  auto& reader = static_cast<parquet::TypedColumnReader<DType>&>(column);
  const int16_t full = column.descr()->max_definition_level();
  std::vector<int16_t> defs(kLevelBatch), reps(kLevelBatch);
  std::vector<typename DType::c_type> values(kLevelBatch);
  const T* ids = reinterpret_cast<const T*>(values.data());
  int64_t row = -1;  // the row being read
  uint64_t count = 0;
  while (column.HasNext()) {
    int64_t got = 0;
    const int64_t n = reader.ReadBatch(kLevelBatch, defs.data(), reps.data(), values.data(), &got);
    if (n <= 0) break;
    count += static_cast<uint64_t>(got);
    if (count > limit)
      return corrupt(fmt::format(
          "{}: {} decodes to more than {} token ids, more than its {} bytes in the file may hold "
          "({} a byte, at least {}): a decompression bomb or a damaged file",
          at.file, at.unit, limit, stored, kTokensPerStoredByte, kMinUnitTokens));
    int64_t begin = 0, next = 0;  // the values of the row being read in this batch
    for (int64_t i = 0; i < n; ++i) {
      if (reps[i] == 0) {
        if (row >= 0) {
          STOKER_RETURN_IF_ERROR(out.append_ids(ids + begin, next - begin, at, row));
          out.end_row();
        }
        begin = next;
        if (++row >= rows)
          return corrupt(fmt::format("{}: {} holds more rows than its {}", at.file, at.unit, rows));
      } else if (row < 0) {
        return corrupt(fmt::format("{}: {} starts inside a row", at.file, at.unit));
      }
      if (defs[i] == full) {
        ++next;
      } else if (defs[i] >= list) {
        return corrupt(
            fmt::format("{}: a null token id at {}", at.row(row), out.row_length() + next - begin));
      } else if (defs[i] < list - 1) {
        return corrupt(fmt::format("{}: a null row, not a document's token ids", at.row(row)));
      }
    }
    if (next != got)
      return corrupt(fmt::format("{}: {} has {} values for {} ids", at.file, at.unit, got, next));
    if (row >= 0) STOKER_RETURN_IF_ERROR(out.append_ids(ids + begin, next - begin, at, row));
  }
  if (row >= 0) out.end_row();
  if (row + 1 != rows)
    return corrupt(
        fmt::format("{}: {} ends after {} of its {} rows", at.file, at.unit, row + 1, rows));
  return Status::ok();
}

Status decode_parquet(const std::string& name, const std::string& column, CopyWriter& out) {
  auto refused = [&](const std::string& why) {
    return corrupt(fmt::format("{}: not a Parquet file stoker reads: {}", name, why));
  };
  arrow::Result<std::shared_ptr<arrow::io::ReadableFile>> file =
      arrow::io::ReadableFile::Open(name);
  if (!file.ok())
    return io_error(fmt::format("{}: {}", name, arrow_message(file.status().message().c_str())));
  arrow::Result<int64_t> size = (*file)->GetSize();
  if (!size.ok())
    return io_error(fmt::format("{}: {}", name, arrow_message(size.status().message().c_str())));
  ReadPool pool;
  try {
    parquet::ReaderProperties properties(&pool.capped);
    properties.enable_buffered_stream();  // a column chunk read kBufferBytes at a time
    properties.set_buffer_size(kBufferBytes);
    parquet::arrow::FileReaderBuilder builder;
    if (arrow::Status s = builder.Open(*file, properties); !s.ok())
      return refused(arrow_message(s.message().c_str()));
    std::unique_ptr<parquet::arrow::FileReader> reader;
    if (arrow::Status s = builder.memory_pool(&pool.capped)->Build(&reader); !s.ok())
      return refused(arrow_message(s.message().c_str()));
    std::shared_ptr<arrow::Schema> schema;
    if (arrow::Status s = reader->GetSchema(&schema); !s.ok())
      return refused(arrow_message(s.message().c_str()));
    STOKER_ASSIGN_OR_RETURN(int index, column_index(name, *schema, column));
    const arrow::DataType& items = *schema->field(index)->type()->field(0)->type();
    parquet::ParquetFileReader& parquet_file = *reader->parquet_reader();
    const parquet::FileMetaData& meta = *parquet_file.metadata();
    const int leaf = column_leaf(*meta.schema(), column);
    const int list = leaf < 0 ? -1 : list_level(*meta.schema()->Column(leaf));
    const parquet::Type::type physical =
        leaf < 0 ? parquet::Type::UNDEFINED : meta.schema()->Column(leaf)->physical_type();
    if (list < 0 || (physical != parquet::Type::INT32 && physical != parquet::Type::INT64))
      return refused(fmt::format("its column '{}' is not one list of integers", printable(column)));
    if (std::optional<uint64_t> max = statistics_max(meta, leaf, items))
      STOKER_RETURN_IF_ERROR(out.widen_to(type_for(*max)));
    const bool unsigned_ids = arrow::is_unsigned_integer(items.id());
    uint64_t first_row = 0;
    for (int g = 0; g < meta.num_row_groups(); ++g) {
      const int64_t rows = meta.RowGroup(g)->num_rows();
      if (rows < 0 || rows > kMaxRowsPerUnit)
        return corrupt(fmt::format("{}: row group {} has {} rows, not 0 to {}", name, g, rows,
                                   kMaxRowsPerUnit));
      const Place at{name, first_row, fmt::format("row group {}", g)};
      const int64_t stored = std::clamp<int64_t>(
          meta.RowGroup(g)->ColumnChunk(leaf)->total_compressed_size(), 0, *size);
      Status status = Status::ok();
      try {  // Arrow's reader throws on damaged pages, and where its pool refuses
        const std::shared_ptr<parquet::ColumnReader> chunk = parquet_file.RowGroup(g)->Column(leaf);
        if (physical == parquet::Type::INT32)
          status = unsigned_ids ? decode_row_group<parquet::Int32Type, uint32_t>(
                                      *chunk, list, stored, rows, at, out)
                                : decode_row_group<parquet::Int32Type, int32_t>(
                                      *chunk, list, stored, rows, at, out);
        else
          status = unsigned_ids ? decode_row_group<parquet::Int64Type, uint64_t>(
                                      *chunk, list, stored, rows, at, out)
                                : decode_row_group<parquet::Int64Type, int64_t>(
                                      *chunk, list, stored, rows, at, out);
      } catch (const std::exception& e) {
        status = pool.refusal(name, at.unit, "pages")
                     .value_or(corrupt(
                         fmt::format("{}: row group {}: {}", name, g, arrow_message(e.what()))));
      }
      STOKER_RETURN_IF_ERROR(status);
      first_row += static_cast<uint64_t>(rows);
    }
  } catch (const std::exception& e) {
    return refused(arrow_message(e.what()));
  }
  return Status::ok();
}

// An Arrow IPC file, stream format (save_to_disk's) or file format (Feather v2), mapped, read a
// record batch at a time.
struct ArrowBatches {
  std::shared_ptr<ReadPool> pool = std::make_shared<ReadPool>();  // outlives the readers
  std::shared_ptr<arrow::io::MemoryMappedFile> file;
  std::shared_ptr<arrow::Schema> schema;
  // The next batch (null at the end).
  std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>()> next;
};

Status arrow_refused(const std::string& name, const std::string& why) {
  return corrupt(fmt::format("{}: not an Arrow file stoker reads: {}", name, why));
}

Result<ArrowBatches> open_arrow(const std::string& name) {
  ArrowBatches out;
  arrow::Result<std::shared_ptr<arrow::io::MemoryMappedFile>> file =
      arrow::io::MemoryMappedFile::Open(name, arrow::io::FileMode::READ);
  if (!file.ok())
    return io_error(fmt::format("{}: {}", name, arrow_message(file.status().message().c_str())));
  out.file = *file;
  arrow::ipc::IpcReadOptions options = arrow::ipc::IpcReadOptions::Defaults();
  options.memory_pool = &out.pool->capped;
  if (auto reader = arrow::ipc::RecordBatchFileReader::Open(out.file, options); reader.ok()) {
    out.schema = (*reader)->schema();
    out.next = [reader = *reader,
                batch = 0]() mutable -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
      if (batch >= reader->num_record_batches()) return nullptr;
      return reader->ReadRecordBatch(batch++);
    };
    return out;
  }
  if (arrow::Status s = out.file->Seek(0); !s.ok())
    return arrow_refused(name, arrow_message(s.message().c_str()));
  auto stream = arrow::ipc::RecordBatchStreamReader::Open(out.file, options);
  if (!stream.ok()) return arrow_refused(name, arrow_message(stream.status().message().c_str()));
  out.schema = (*stream)->schema();
  out.next = [stream = *stream]() { return stream->Next(); };
  return out;
}

// Calls `each` with every record batch's column `index` (its lists) and its place: its error,
// the reader's (naming the batch), or the first of `each`'s.
Status each_arrow_batch(const std::string& name, ArrowBatches& batches, int index,
                        const std::function<Status(const arrow::Array&, const Place&)>& each) {
  for (uint64_t first_row = 0, batch = 0;; ++batch) {
    const std::string unit = fmt::format("record batch {}", batch);
    arrow::Result<std::shared_ptr<arrow::RecordBatch>> got = batches.next();
    if (!got.ok())
      return batches.pool->refusal(name, unit, "record batches")
          .value_or(arrow_refused(
              name, fmt::format("{}: {}", unit, arrow_message(got.status().message().c_str()))));
    if (!*got) return Status::ok();
    STOKER_RETURN_IF_ERROR(each(*(*got)->column(index), {name, first_row, unit}));
    first_row += static_cast<uint64_t>((*got)->num_rows());
  }
}

Status decode_arrow(const std::string& name, const std::string& column, CopyWriter& out) {
  STOKER_ASSIGN_OR_RETURN(ArrowBatches batches, open_arrow(name));
  STOKER_ASSIGN_OR_RETURN(int index, column_index(name, *batches.schema, column));
  return each_arrow_batch(name, batches, index, [&](const arrow::Array& lists, const Place& at) {
    return append_array(lists, at, out);
  });
}

// The token type of Arrow integer type `id`.
TokenType arrow_token_type(arrow::Type::type id) {
  switch (id) {
    case arrow::Type::UINT8:
      return TokenType::kUint8;
    case arrow::Type::INT8:
      return TokenType::kInt8;
    case arrow::Type::UINT16:
      return TokenType::kUint16;
    case arrow::Type::INT16:
      return TokenType::kInt16;
    case arrow::Type::UINT32:
      return TokenType::kUint32;
    case arrow::Type::INT32:
      return TokenType::kInt32;
    case arrow::Type::INT64:
      return TokenType::kInt64;
    default:
      return TokenType::kUint64;
  }
}

// Adds the rows of `lists` (a record batch's column, checked: of the column's type, its offsets
// within its ids) to `result`'s in-place layout as data file `file` of the map at `base` of
// `size` bytes: false where they cannot be read in place (nulls, or ids outside the map).
template <typename Offset>
bool add_in_place(const arrow::Array& lists, const arrow::Array& items, uint32_t file,
                  const uint8_t* base, uint64_t size, bool starts, TokenColumn& result) {
  if (lists.null_count() > 0 || items.null_count() > 0) return false;
  const Offset* offsets = lists.data()->GetValues<Offset>(1);
  const int64_t rows = lists.length();
  if (rows == 0) return true;  // its offsets may be an empty buffer
  const auto first = static_cast<uint64_t>(offsets[0]);
  const uint64_t count = static_cast<uint64_t>(offsets[rows]) - first;
  result.documents += static_cast<uint64_t>(rows);
  if (count == 0) return true;
  const std::shared_ptr<arrow::Buffer>& values = items.data()->buffers[1];
  const size_t item = token_type_size(result.layout.type);
  const auto from = reinterpret_cast<uintptr_t>(base);
  if (!values || reinterpret_cast<uintptr_t>(values->data()) < from) return false;
  const uint64_t at = (reinterpret_cast<uintptr_t>(values->data()) - from) +
                      (static_cast<uint64_t>(items.offset()) + first) * item;
  if (at > size || count > (size - at) / item) return false;  // not in the map: copied
  if (starts)
    for (int64_t r = 0; r < rows; ++r)
      if (offsets[r + 1] > offsets[r])
        result.document_starts.push_back(result.layout.tokens + static_cast<uint64_t>(offsets[r]) -
                                         first);
  result.layout.append(at, count, file);
  return true;
}

// Sets `result`'s in-place layout of column `column` of its Arrow files: false where one of them
// cannot be read in place (it is copied then); a damaged file's error.
Result<bool> arrow_in_place(const std::string& column, bool starts, TokenColumn& result) {
  for (size_t f = 0; f < result.files.size(); ++f) {
    const std::string& name = result.files[f];
    STOKER_ASSIGN_OR_RETURN(ArrowBatches batches, open_arrow(name));
    STOKER_ASSIGN_OR_RETURN(int index, column_index(name, *batches.schema, column));
    const arrow::DataType& lists_type = *batches.schema->field(index)->type();
    const TokenType type = arrow_token_type(lists_type.field(0)->type()->id());
    if (f > 0 && type != result.layout.type) return false;
    result.layout.type = type;
    arrow::Result<int64_t> size = batches.file->GetSize();
    arrow::Result<std::shared_ptr<arrow::Buffer>> whole =
        size.ok() ? batches.file->ReadAt(0, *size) : size.status();
    if (!whole.ok())
      return io_error(fmt::format("{}: {}", name, arrow_message(whole.status().message().c_str())));
    const uint8_t* base = (*whole)->data();
    bool in_place = true;
    STOKER_RETURN_IF_ERROR(
        each_arrow_batch(name, batches, index, [&](const arrow::Array& lists, const Place& at) {
          if (arrow::Status valid = lists.ValidateFull(); !valid.ok())
            return corrupt(fmt::format("{} ({}): damaged column data: {}", name, at.unit,
                                       arrow_message(valid.message().c_str())));
          const auto file = static_cast<uint32_t>(f);
          const auto bytes = static_cast<uint64_t>(*size);
          if (in_place && lists.type_id() == arrow::Type::LIST)
            in_place =
                add_in_place<int32_t>(lists, *static_cast<const arrow::ListArray&>(lists).values(),
                                      file, base, bytes, starts, result);
          else if (in_place)
            in_place = add_in_place<int64_t>(
                lists, *static_cast<const arrow::LargeListArray&>(lists).values(), file, base,
                bytes, starts, result);
          return Status::ok();
        }));
    if (!in_place) return false;
  }
  return true;
}

// Removes folder `dir` unless released: a copy that was not finished.
class FolderGuard {
 public:
  explicit FolderGuard(std::string dir) : dir_(std::move(dir)) {}
  ~FolderGuard() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  void release() { dir_.clear(); }

 private:
  std::string dir_;
};

// Removes the folders of `parent` named KEY.* but `keep`: the other copies of the same files,
// and temporaries (KEY.tmp-PID-N) of processes that no longer run.
void remove_other_copies(const std::string& parent, const std::string& key,
                         const std::string& keep) {
  std::error_code ec;
  const std::string temp = key + ".tmp-";
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == keep || name.compare(0, key.size() + 1, key + ".") != 0) continue;
    if (name.compare(0, temp.size(), temp) == 0) {
      const long pid = std::strtol(name.c_str() + temp.size(), nullptr, 10);
      if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    }
    std::error_code ignored;
    fs::remove_all(entry.path(), ignored);
  }
}

}  // namespace

Result<TokenColumn> token_column(const std::string& path, const std::string& column,
                                 const std::string& cache_dir, bool document_starts) {
  TokenColumn result;
  result.location = path;
  result.column = column;
  const bool parquet = is_data_path(path, ".parquet");
  result.format = parquet ? "Parquet" : "Arrow";
  STOKER_ASSIGN_OR_RETURN(result.files, list_data_files(path, parquet ? ".parquet" : ".arrow"));
  const std::shared_ptr<const InPlaceFiles> files = local_files(result.files);
  std::string paths = column, stamps = fmt::format("{}", kCopyVersion);
  std::vector<FileIdentity>& identities = result.identities;
  for (size_t i = 0; i < result.files.size(); ++i) {
    STOKER_ASSIGN_OR_RETURN(FileIdentity identity, files->identity(i));
    identities.push_back(identity);
    std::error_code ec;
    paths += '\0' + fs::absolute(result.files[i], ec).lexically_normal().string();
    stamps += fmt::format("\n{} {}", identity.size, identity.stamp);
  }
  // Identities checked after the files are read: nothing read of a file that changed meanwhile.
  const auto unchanged = [&](const char* while_) -> Status {
    for (size_t i = 0; i < result.files.size(); ++i) {
      Result<FileIdentity> now = files->identity(i);
      if (!now.is_ok()) return now.status();
      if (now.value() != identities[i])
        return io_error(
            fmt::format("{}: changed while it was {} (its size or time)", result.files[i], while_));
    }
    return Status::ok();
  };
  if (!parquet) {
    STOKER_ASSIGN_OR_RETURN(bool in_place, arrow_in_place(column, document_starts, result));
    if (in_place) {
      STOKER_RETURN_IF_ERROR(unchanged("read"));
      result.in_place = true;
      return result;
    }
    result.layout = {};
    result.documents = 0;
    result.document_starts.clear();
  }
  const std::string key = hex(xxh3_64(paths.data(), paths.size()));
  const std::string name = key + "." + hex(xxh3_64(stamps.data(), stamps.size()));
  const std::string parent = fmt::format("{}/{}", cache_dir, kTokenColumnFolder);
  const std::string dir = parent + "/" + name;
  result.prefix = dir + "/tokens";
  std::error_code ec;
  if (fs::is_regular_file(result.prefix + ".idx", ec)) return result;

  fs::create_directories(parent, ec);
  if (ec) return io_error(fmt::format("{}: {}", parent, ec.message()));
  static std::atomic<uint64_t> built{0};
  const std::string temp = fmt::format("{}/{}.tmp-{}-{}", parent, key, ::getpid(), built++);
  fs::create_directory(temp, ec);
  if (ec) return io_error(fmt::format("{}: {}", temp, ec.message()));
  FolderGuard guard(temp);
  CopyWriter out(temp, TokenType::kUint16);
  STOKER_RETURN_IF_ERROR(out.open());
  for (const std::string& file : result.files)
    STOKER_RETURN_IF_ERROR(parquet ? decode_parquet(file, column, out)
                                   : decode_arrow(file, column, out));
  STOKER_RETURN_IF_ERROR(out.finish());
  STOKER_RETURN_IF_ERROR(unchanged("decoded"));
  fs::rename(temp, dir, ec);
  if (ec && !fs::is_regular_file(result.prefix + ".idx"))  // else another process's is there
    return io_error(fmt::format("{}: {}", dir, ec.message()));
  if (!ec) guard.release();
  remove_other_copies(parent, key, name);
  result.decoded = true;
  return result;
}

}  // namespace stoker
