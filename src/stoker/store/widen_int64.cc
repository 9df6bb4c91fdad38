// widen_to_int64 (record_views.h): one loop per element type, compiled by Highway for every
// x86 target it knows (SSSE3, SSE4, AVX2, AVX-512) and picked at run time
// (HWY_DYNAMIC_DISPATCH: Highway reads CPUID itself). On AVX2 and AVX-512 each vector is
// widened by one instruction from memory (vpmovzxwq and its kin: 8 tokens into 64 bytes on
// AVX-512), written by hand: GCC 12 vectorises the plain loop in two widening steps with
// shuffles between them, which measured about 1 us slower a batch of 8 x 2,048 uint16 tokens
// (their input_ids and labels); Highway 1.0 has no 16- to 64-bit promotion. Elsewhere, and
// for the last elements, the plain loop. The values are the loop's on every target. The bytes
// `ahead` are prefetched a few lines per block of elements, so their misses overlap the
// widening instead of queueing at once: a token sample is a page at a random place, and
// prefetching all of the next one before widening this one measured slower
// (bench/token_throughput.py).

#include <algorithm>
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

// The first elements of `n` of type T at `bytes` widened into int64s at `out` a vector at a
// time, where the target widens 8-, 16- and 32-bit elements to 64 bits in one instruction;
// returns how many (0 elsewhere).
template <typename T>
size_t widen_vectors(const uint8_t* bytes, size_t n, uint8_t* out) {
  constexpr bool kSigned = static_cast<T>(-1) < 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  constexpr size_t kLanes = 8;  // 64-bit lanes of a 512-bit vector
  const auto widen = [](const uint8_t* from) {
    if constexpr (sizeof(T) == 1) {
      const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(from));
      return kSigned ? _mm512_cvtepi8_epi64(v) : _mm512_cvtepu8_epi64(v);
    } else if constexpr (sizeof(T) == 2) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
      return kSigned ? _mm512_cvtepi16_epi64(v) : _mm512_cvtepu16_epi64(v);
    } else {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
      return kSigned ? _mm512_cvtepi32_epi64(v) : _mm512_cvtepu32_epi64(v);
    }
  };
  const auto store = [](uint8_t* to, __m512i v) { _mm512_storeu_si512(to, v); };
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  constexpr size_t kLanes = 4;  // 64-bit lanes of a 256-bit vector
  const auto widen = [](const uint8_t* from) {
    if constexpr (sizeof(T) == 1) {
      int32_t four;
      std::memcpy(&four, from, sizeof(four));
      const __m128i v = _mm_cvtsi32_si128(four);
      return kSigned ? _mm256_cvtepi8_epi64(v) : _mm256_cvtepu8_epi64(v);
    } else if constexpr (sizeof(T) == 2) {
      const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(from));
      return kSigned ? _mm256_cvtepi16_epi64(v) : _mm256_cvtepu16_epi64(v);
    } else {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
      return kSigned ? _mm256_cvtepi32_epi64(v) : _mm256_cvtepu32_epi64(v);
    }
  };
  const auto store = [](uint8_t* to, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), v);
  };
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    store(out + i * sizeof(int64_t), widen(bytes + i * sizeof(T)));
  return i;
#else
  (void)kSigned, (void)bytes, (void)n, (void)out;
  return 0;
#endif
}

// Elements of type T at `bytes` into int64s at `out`, of any alignment (a record's fields are
// packed).
template <typename T>
void widen_block(const uint8_t* bytes, size_t n, uint8_t* out) {
  if constexpr (sizeof(T) == sizeof(int64_t)) {
    std::memcpy(out, bytes, n * sizeof(int64_t));
  } else {
    for (size_t i = widen_vectors<T>(bytes, n, out); i < n; ++i) {
      T value;
      std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
      const auto wide = static_cast<int64_t>(value);
      std::memcpy(out + i * sizeof(int64_t), &wide, sizeof(int64_t));
    }
  }
}

// widen_block over blocks of kBlock elements, `ahead`'s lines spread evenly over them.
template <typename T>
void widen_elements(const uint8_t* bytes, size_t n, uint8_t* out, const uint8_t* ahead,
                    size_t ahead_bytes) {
  constexpr size_t kBlock = 256;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  const size_t lines = (ahead_bytes + 63) / 64;
  const size_t lines_per_block = blocks == 0 ? 0 : (lines + blocks - 1) / blocks;
  size_t line = 0;
  for (size_t at = 0; at < n; at += kBlock) {
    for (const size_t stop = std::min(lines, line + lines_per_block); line < stop; ++line)
      __builtin_prefetch(ahead + std::min(line * 64, ahead_bytes - 1));
    widen_block<T>(bytes + at * sizeof(T), std::min(kBlock, n - at), out + at * sizeof(int64_t));
  }
  for (; line < lines; ++line) __builtin_prefetch(ahead + std::min(line * 64, ahead_bytes - 1));
}

void Widen(StoredType type, const uint8_t* bytes, size_t n, uint8_t* out, const uint8_t* ahead,
           size_t ahead_bytes) {
  switch (type) {
    case StoredType::kUint8:
      return widen_elements<uint8_t>(bytes, n, out, ahead, ahead_bytes);
    case StoredType::kInt8:
      return widen_elements<int8_t>(bytes, n, out, ahead, ahead_bytes);
    case StoredType::kUint16:
      return widen_elements<uint16_t>(bytes, n, out, ahead, ahead_bytes);
    case StoredType::kInt16:
      return widen_elements<int16_t>(bytes, n, out, ahead, ahead_bytes);
    case StoredType::kUint32:
      return widen_elements<uint32_t>(bytes, n, out, ahead, ahead_bytes);
    case StoredType::kInt32:
      return widen_elements<int32_t>(bytes, n, out, ahead, ahead_bytes);
    case StoredType::kInt64:
    case StoredType::kUint64:
      return widen_elements<int64_t>(bytes, n, out, ahead, ahead_bytes);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace stoker
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace stoker {

HWY_EXPORT(Widen);

void widen_to_int64(StoredType type, const uint8_t* bytes, size_t n, uint8_t* out, ByteSpan ahead) {
  HWY_DYNAMIC_DISPATCH(Widen)(type, bytes, n, out, ahead.data, ahead.size);
}

}  // namespace stoker
#endif  // HWY_ONCE
