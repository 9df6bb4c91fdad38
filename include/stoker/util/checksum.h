#pragma once
// xxHash64 checksums (libxxhash), the one checksum of the shard format.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace stoker {

// xxHash64 of `size` bytes at `data` with seed 0.
uint64_t xxh64(const void* data, size_t size);

// Incremental xxHash64 over a stream of byte ranges; equals xxh64() of their concatenation.
// Not thread-safe.
class StreamingXxh64 {
 public:
  StreamingXxh64();
  ~StreamingXxh64();
  StreamingXxh64(const StreamingXxh64&) = delete;
  StreamingXxh64& operator=(const StreamingXxh64&) = delete;

  void update(const void* data, size_t size);
  uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace stoker
