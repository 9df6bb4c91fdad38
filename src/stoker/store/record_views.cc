#include "stoker/store/record_views.h"

#include <cstring>

namespace stoker {

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

void RecordViews::write(uint64_t i, int field, size_t elements, uint8_t* out,
                        ByteSpan ahead) const {
  const FieldView& view = fields[static_cast<size_t>(field)];
  if (view.computed) return computed->write(i, field, out);
  const uint8_t* from = start(i) + view.offset;
  if (view.dtype == DType::kInt64) {
    widen_to_int64(view.type, from, elements, out, ahead);
  } else {
    std::memcpy(out, from, elements * stored_type_size(view.type));
  }
}

}  // namespace stoker
