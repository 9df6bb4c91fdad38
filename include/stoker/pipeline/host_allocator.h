#pragma once
// HostAllocator: how a loader allocates its batch buffers' host memory (plain, or page-locked
// for a CUDA consumer: python/pinned_allocator.h, pipeline/c10_device.h).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace stoker {

// Allocates `bytes` of host memory and returns it with its owner (the deleter frees it). The
// default is 64-byte-aligned malloc; a CUDA build passes a pinned-memory allocator.
using HostAllocator = std::function<std::shared_ptr<uint8_t>(size_t bytes)>;
HostAllocator default_host_allocator();

}  // namespace stoker
