#pragma once
// ByteSpan: a borrowed, read-only byte range. Shared by every layer that deals in bytes (a
// record of a shard, an encoded image); the owner of the bytes says how long they stay valid.

#include <cstddef>
#include <cstdint>

namespace stoker {

// A borrowed byte range; valid while its owner (e.g. the ShardReader that returned it) lives.
struct ByteSpan {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

}  // namespace stoker
