#include "stoker/store/shard_format.h"

#include <string>

#include "stoker/store/record_view.h"

namespace stoker {

using namespace shard_format;

Result<ByteSpan> variable_field(const Schema& schema, ByteSpan record, int field) {
  const auto& fields = schema.fields();
  if (field < 0 || field >= static_cast<int>(fields.size()) || fields[field].is_fixed())
    return invalid_argument("field " + std::to_string(field) + " is not a bytes field");
  if (record.size < schema.min_record_bytes())
    return corrupt("length table runs past the record (" + std::to_string(record.size) +
                   " bytes, the schema needs " + std::to_string(schema.min_record_bytes()) + ")");
  const uint8_t* table = record.data + schema.fixed_bytes();
  size_t payload = schema.min_record_bytes();
  for (int f = 0;; ++f) {
    if (fields[f].is_fixed()) continue;
    const uint32_t len = load_u32(table);
    table += sizeof(uint32_t);
    if (len > record.size - payload)
      return corrupt("field '" + fields[f].name + "' length " + std::to_string(len) +
                     " runs past the record (" + std::to_string(record.size) + " bytes)");
    if (f == field) return ByteSpan{record.data + payload, len};
    payload += len;
  }
}

}  // namespace stoker
