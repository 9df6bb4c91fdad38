#include "stoker/util/checksum.h"

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

namespace stoker {

uint64_t xxh3_64(const void* data, size_t size) {
#if defined(__x86_64__)
  // libxxhash picks the widest SIMD the CPU has (AVX2/AVX-512) at run time; same result.
  return XXH3_64bits_dispatch(data, size);
#else
  return XXH3_64bits(data, size);
#endif
}

Hash128 xxh3_128(const void* data, size_t size) {
#if defined(__x86_64__)
  const XXH128_hash_t hash = XXH3_128bits_dispatch(data, size);
#else
  const XXH128_hash_t hash = XXH3_128bits(data, size);
#endif
  return Hash128{hash.low64, hash.high64};
}

}  // namespace stoker
