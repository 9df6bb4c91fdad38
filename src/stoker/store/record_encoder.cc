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
  if (f.is_fixed()) return invalid_argument("field '" + f.name + "' is not a bytes field");
  if (size > shard_format::kMaxPayloadBytes)
    return invalid_argument("field '" + f.name + "': value larger than 4 GiB");
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
