#pragma once
// Schema: the fields of every record in a dataset. A field is either fixed-size (a dtype and a
// shape; an empty shape is a scalar) or variable-size bytes (e.g. an encoded JPEG). Records lay
// out fixed fields first, packed in schema order at offsets known from the schema alone, so
// they are readable without parsing anything else (docs/FORMAT.md).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
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

struct Field {
  std::string name;
  DType dtype = DType::kUint8;
  std::vector<int64_t> shape;  // fixed fields only; {} is a scalar

  bool is_fixed() const { return dtype != DType::kBytes; }
  // Elements and bytes of a field of a valid Schema (unchecked on other fields).
  int64_t num_elements() const;
  // Bytes the field takes in a record; 0 for kBytes.
  size_t fixed_bytes() const;
  bool operator==(const Field& other) const;
  bool operator!=(const Field& other) const { return !(*this == other); }
};

// Immutable after construction; thread-safe to share.
class Schema {
 public:
  // Validates names (non-empty, unique), shapes (dimensions in 1 .. kMaxDimension) and sizes
  // (no field nor the fixed part above kMaxFixedBytes), with arithmetic that cannot overflow;
  // errors are kInvalidArgument.
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
  // Number of variable-size (bytes) fields; each has a u32 length after the fixed part.
  int num_variable() const { return num_variable_; }
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
