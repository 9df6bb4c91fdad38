// widen_to_int64 (record_views.h): one plain loop per element type, compiled by Highway for
// every x86 target it knows (SSSE3, SSE4, AVX2, AVX-512) and picked at run time
// (HWY_DYNAMIC_DISPATCH: Highway reads CPUID itself). GCC vectorises the loop at -O3 with each
// target's widening loads and its widest stores: AVX-512's are 64 bytes, 8 tokens, where the
// x86-64 baseline's SSE2 unpacks and stores 16 bytes at a time. The values are the loop's on
// every target.

#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "stoker/store/widen_int64.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must follow foreach_target.h.
#include <hwy/highway.h>

#include "stoker/store/record_views.h"

HWY_BEFORE_NAMESPACE();
namespace stoker {
namespace HWY_NAMESPACE {

// Elements of type T at `bytes` into int64s at `out`, of any alignment (a record's fields are
// packed).
template <typename T>
void widen_elements(const uint8_t* bytes, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    const auto wide = static_cast<int64_t>(value);
    std::memcpy(out + i * sizeof(int64_t), &wide, sizeof(int64_t));
  }
}

void Widen(StoredType type, const uint8_t* bytes, size_t n, uint8_t* out) {
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

}  // namespace HWY_NAMESPACE
}  // namespace stoker
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace stoker {

HWY_EXPORT(Widen);

void widen_to_int64(StoredType type, const uint8_t* bytes, size_t n, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(Widen)(type, bytes, n, out);
}

}  // namespace stoker
#endif  // HWY_ONCE
