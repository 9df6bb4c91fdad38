// largest_token (token_scan.h): one plain max loop per token size, compiled by Highway for every
// x86 target (HWY_DYNAMIC_DISPATCH), vectorised by GCC at -O3 with each target's widest compares;
// first_token_from scans blocks by their largest and looks for the token only in a block whose
// largest is at or above the limit.

#include <algorithm>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "stoker/store/import/token_scan.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must follow foreach_target.h.
#include <hwy/highway.h>

#include "stoker/store/import/token_scan.h"

HWY_BEFORE_NAMESPACE();
namespace stoker {
namespace HWY_NAMESPACE {

// The largest of `n` unsigned T at `bytes`, of any alignment.
template <typename T>
uint64_t largest_of(const uint8_t* bytes, size_t n) {
  T most = 0;
  for (size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    most = value > most ? value : most;
  }
  return most;
}

uint64_t Largest(size_t size, const uint8_t* bytes, size_t n) {
  switch (size) {
    case 1:
      return largest_of<uint8_t>(bytes, n);
    case 2:
      return largest_of<uint16_t>(bytes, n);
    case 4:
      return largest_of<uint32_t>(bytes, n);
    default:
      return largest_of<uint64_t>(bytes, n);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace stoker
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace stoker {
namespace {

// Tokens scanned at a time by first_token_from: a block in L1 when its largest is too large.
constexpr size_t kScanBlock = 4096;

}  // namespace

HWY_EXPORT(Largest);

uint64_t largest_token(TokenType type, const uint8_t* bytes, size_t n) {
  return HWY_DYNAMIC_DISPATCH(Largest)(token_type_size(type), bytes, n);
}

std::optional<size_t> first_token_from(TokenType type, const uint8_t* bytes, size_t n,
                                       uint64_t limit) {
  const size_t item = token_type_size(type);
  for (size_t first = 0; first < n; first += kScanBlock) {
    const size_t count = std::min(kScanBlock, n - first);
    if (largest_token(type, bytes + first * item, count) < limit) continue;
    for (size_t i = first; i < first + count; ++i)
      if (largest_token(type, bytes + i * item, 1) >= limit) return i;
  }
  return std::nullopt;
}

}  // namespace stoker
#endif  // HWY_ONCE
