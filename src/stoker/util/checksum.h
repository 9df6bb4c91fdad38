#pragma once
// The one checksum of the shard format: XXH3-64 (libxxhash), seed 0. Chosen over XXH64 because
// it verifies random-order Fashion-MNIST-sized records ~1.5x faster (docs/BENCHMARKS.md).

#include <cstddef>
#include <cstdint>

namespace stoker {

// XXH3-64 of `size` bytes at `data`. Thread-safe.
uint64_t xxh3_64(const void* data, size_t size);

// XXH3-128 of `size` bytes at `data`, where a key must tell apart more than 64 bits allow
// (what a cache keeps by content, across runs). Thread-safe.
struct Hash128 {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const Hash128& o) const { return low == o.low && high == o.high; }
};
Hash128 xxh3_128(const void* data, size_t size);

}  // namespace stoker
