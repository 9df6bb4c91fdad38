#include "stoker/store/record_views.h"

#include <cstring>

namespace stoker {
namespace {

// Widens elements of type T into int64s at `out`, of any alignment (a record's fields are
// packed); a loop the compiler vectorises at -O3 (a load, a widening, a store).
template <typename T>
void widen_elements(const uint8_t* bytes, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    const auto wide = static_cast<int64_t>(value);
    std::memcpy(out + i * sizeof(int64_t), &wide, sizeof(int64_t));
  }
}

}  // namespace

size_t stored_type_size(StoredType type) {
  switch (type) {
    case StoredType::kUint8:
    case StoredType::kInt8:
      return 1;
    case StoredType::kUint16:
    case StoredType::kInt16:
      return 2;
    case StoredType::kUint32:
    case StoredType::kInt32:
      return 4;
    case StoredType::kInt64:
    case StoredType::kUint64:
      return 8;
  }
  return 1;
}

void widen_to_int64(StoredType type, const uint8_t* bytes, size_t n, uint8_t* out) {
  switch (type) {
    case StoredType::kUint8:
      return widen_elements<uint8_t>(bytes, n, out);
    case StoredType::kInt8:
      return widen_elements<int8_t>(bytes, n, out);
    case StoredType::kUint16:
      return widen_elements<uint16_t>(bytes, n, out);
    case StoredType::kInt16:
      return widen_elements<int16_t>(bytes, n, out);
    case StoredType::kUint32:
      return widen_elements<uint32_t>(bytes, n, out);
    case StoredType::kInt32:
      return widen_elements<int32_t>(bytes, n, out);
    case StoredType::kInt64:
    case StoredType::kUint64:
      std::memcpy(out, bytes, n * sizeof(int64_t));
      return;
  }
}

void RecordViews::write(uint64_t i, int field, size_t elements, uint8_t* out) const {
  const FieldView& view = fields[static_cast<size_t>(field)];
  if (view.computed) return computed->write(i, field, out);
  const uint8_t* from = start(i) + view.offset;
  if (view.dtype == DType::kInt64) {
    widen_to_int64(view.type, from, elements, out);
  } else {
    std::memcpy(out, from, elements * stored_type_size(view.type));
  }
}

}  // namespace stoker
