#include "stoker/store/record_encoder.h"

#include <cstring>
#include <limits>
#include <string>

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
  if (size > std::numeric_limits<uint32_t>::max())
    return invalid_argument("field '" + f.name + "': value larger than 4 GiB");
  const auto* p = static_cast<const uint8_t*>(data);
  variable_[field].assign(p, p + size);
  return Status::ok();
}

const std::vector<uint8_t>& RecordEncoder::encode() {
  record_.resize(schema_.fixed_bytes());
  for (size_t f = 0; f < variable_.size(); ++f) {
    if (schema_.fields()[f].is_fixed()) continue;
    uint32_t len = static_cast<uint32_t>(variable_[f].size());
    const auto* p = reinterpret_cast<const uint8_t*>(&len);
    record_.insert(record_.end(), p, p + sizeof len);
  }
  for (const auto& payload : variable_)
    record_.insert(record_.end(), payload.begin(), payload.end());
  return record_;
}

}  // namespace stoker
