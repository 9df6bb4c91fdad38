#include "stoker/store/record_encoder.h"

#include <cstring>
#include <string>

#include "stoker/store/shard_format.h"

namespace stoker {

RecordEncoder::RecordEncoder(const Schema& schema)
    : schema_(schema), record_(schema.fixed_bytes(), 0), variable_(schema.fields().size()) {}

Status RecordEncoder::set_fixed(int field, const void* data, size_t size) {
  const Field& f = schema_.fields().at(field);
  if (!f.is_fixed() || size != f.fixed_bytes())
    return invalid_argument("field '" + f.name + "' takes " + std::to_string(f.fixed_bytes()) +
                            " bytes, got " + std::to_string(size));
  std::memcpy(record_.data() + schema_.fixed_offset(field), data, size);
  return Status::ok();
}

Status RecordEncoder::set_bytes(int field, const void* data, size_t size) {
  const Field& f = schema_.fields().at(field);
  if (f.dtype != DType::kBytes)
    return invalid_argument("field '" + f.name + "' is not a bytes field");
  return set_payload(field, data, size);
}

Status RecordEncoder::set_rows(int field, const void* data, uint64_t rows) {
  const Field& f = schema_.fields().at(field);
  if (!f.is_variable_length())
    return invalid_argument("field '" + f.name + "' is not a variable-length field");
  // row_bytes() >= 1: the division keeps rows × row_bytes() from overflowing.
  if (rows > shard_format::kMaxPayloadBytes / f.row_bytes())
    return invalid_argument("field '" + f.name + "': " + std::to_string(rows) +
                            " rows take 4 GiB or more");
  return set_payload(field, data, rows * f.row_bytes());
}

Status RecordEncoder::set_payload(int field, const void* data, size_t size) {
  if (size > shard_format::kMaxPayloadBytes)
    return invalid_argument("field '" + schema_.fields()[field].name +
                            "': value larger than 4 GiB");
  const auto* p = static_cast<const uint8_t*>(data);
  variable_[field].assign(p, p + size);
  return Status::ok();
}

const std::vector<uint8_t>& RecordEncoder::encode() {
  record_.resize(schema_.fixed_bytes());
  shard_format::encode_variable_part(schema_, variable_, &record_);
  return record_;
}

}  // namespace stoker
