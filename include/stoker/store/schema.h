#pragma once
// Schema: the fields of every record in a dataset. A field is fixed-size (a dtype and a shape;
// an empty shape is a scalar), variable-length typed (a dtype and a shape whose leading
// dimension, named, varies per record: float32 [N, 4] boxes) or variable-size bytes (e.g. an
// encoded JPEG). Records lay out fixed fields first, packed in schema order at offsets known
// from the schema alone, so they are readable without parsing anything else (docs/FORMAT.md).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stoker/util/enum_names.h"
#include "stoker/util/status.h"

namespace stoker {

enum class DType { kUint8, kInt64, kFloat32, kBytes };

// Largest dimension of a fixed field's shape.
constexpr int64_t kMaxDimension = int64_t{1} << 31;
// Most bytes a fixed field, and the fixed part of a record (all fixed fields), may take: 4 GiB.
constexpr uint64_t kMaxFixedBytes = uint64_t{1} << 32;
// Longest JSON form of a schema from_json() parses (room for about 10,000 fields).
constexpr size_t kMaxSchemaJsonBytes = size_t{1} << 20;

// The dtypes' names, as the format writes them (docs/FORMAT.md).
inline constexpr auto kDTypeNames = enum_names<DType>({{DType::kUint8, "uint8"},
                                                       {DType::kInt64, "int64"},
                                                       {DType::kFloat32, "float32"},
                                                       {DType::kBytes, "bytes"}});

// "uint8", "int64", "float32", "bytes".
const char* dtype_name(DType dtype);
// The dtype dtype_name() calls `name`, or nullopt.
std::optional<DType> dtype_from_name(const std::string& name);
// Bytes per element of a fixed dtype (1, 8, 4); 0 for kBytes.
size_t dtype_size(DType dtype);

// Most bytes one row of a variable-length field may take (a row must fit a u32 length).
constexpr uint64_t kMaxRowBytes = (uint64_t{1} << 32) - 1;

struct Field {
  Field() = default;
  Field(std::string name, DType dtype, std::vector<int64_t> shape = {}, std::string length_dim = {})
      : name(std::move(name)),
        dtype(dtype),
        shape(std::move(shape)),
        length_dim(std::move(length_dim)) {}

  std::string name;
  DType dtype = DType::kUint8;
  // Fixed fields: the shape ({} is a scalar). Variable-length fields: the trailing dimensions
  // of one row ({} for [N]); the value's shape is [rows] + shape. Bytes fields: {}.
  std::vector<int64_t> shape;
  // Variable-length fields only: the name of the leading dimension ("N"). Fields naming the
  // same dimension have the same number of rows in every record.
  std::string length_dim;

  // A value of the same size in every record, stored in the record's fixed part.
  bool is_fixed() const { return dtype != DType::kBytes && length_dim.empty(); }
  // A typed field whose leading dimension varies per record (stored like a bytes field).
  bool is_variable_length() const { return !length_dim.empty(); }
  // Elements of a fixed field, or of one row of a variable-length field, of a valid Schema
  // (unchecked on other fields).
  int64_t num_elements() const;
  // Bytes the field takes in a record's fixed part; 0 for bytes and variable-length fields.
  size_t fixed_bytes() const;
  // Bytes of one row of a variable-length field; 0 for other fields.
  size_t row_bytes() const;
  bool operator==(const Field& other) const;
  bool operator!=(const Field& other) const { return !(*this == other); }
};

// Immutable after construction; thread-safe to share.
class Schema {
 public:
  // Validates names (non-empty, unique), shapes (dimensions in 1 .. kMaxDimension), dimension
  // names (non-empty, no control characters; not on bytes fields) and sizes (no field nor the
  // fixed part above kMaxFixedBytes, no row above kMaxRowBytes), with arithmetic that cannot
  // overflow; errors are kInvalidArgument.
  static Result<Schema> create(std::vector<Field> fields);
  // Parses the JSON form written by to_json() (at most kMaxSchemaJsonBytes); errors are
  // kCorrupt and name `origin`.
  static Result<Schema> from_json(const std::string& json, const std::string& origin);

  Schema() = default;
  std::string to_json() const;

  const std::vector<Field>& fields() const { return fields_; }
  // Index of the field called `name`, or -1.
  int find(const std::string& name) const;
  // Offset of fixed field `i` inside a record.
  size_t fixed_offset(int i) const { return offsets_[i]; }
  // Bytes of the fixed part that starts every record.
  size_t fixed_bytes() const { return fixed_bytes_; }
  // Number of variable-size (bytes and variable-length) fields; each has a u32 length after
  // the fixed part.
  int num_variable() const { return num_variable_; }
  // The format version a dataset of this schema is written in (docs/FORMAT.md "Versioning"):
  // 2 if a field is variable-length, else 1.
  uint32_t format_version() const;
  // Smallest valid record: fixed part plus the variable-length table.
  size_t min_record_bytes() const { return fixed_bytes_ + 4 * static_cast<size_t>(num_variable_); }

  bool operator==(const Schema& other) const { return fields_ == other.fields_; }
  bool operator!=(const Schema& other) const { return !(*this == other); }

 private:
  std::vector<Field> fields_;
  std::vector<size_t> offsets_;
  size_t fixed_bytes_ = 0;
  int num_variable_ = 0;
};

}  // namespace stoker
