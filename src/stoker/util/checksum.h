#pragma once
// The one checksum of the shard format: XXH3-64 (libxxhash), seed 0. Chosen over XXH64 because
// it verifies random-order Fashion-MNIST-sized records ~1.5x faster (docs/BENCHMARKS.md).

#include <cstddef>
#include <cstdint>

namespace stoker {

// XXH3-64 of `size` bytes at `data`. Thread-safe.
uint64_t xxh3_64(const void* data, size_t size);

}  // namespace stoker
