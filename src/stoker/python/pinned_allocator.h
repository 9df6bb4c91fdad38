#pragma once
// Batch buffers in page-locked ("pinned") memory for a CUDA consumer, without linking CUDA.
// The package passes the addresses of the CUDA runtime's cudaHostAlloc and cudaFreeHost as
// loaded in the process (torch loaded them); the loader's workers then build each batch
// straight into memory the GPU's copy engine reads by DMA, and the consumer's only copy is the
// non-blocking one to the device.
//
//   HostAllocator a = pinned_host_allocator(alloc_address, free_address);
//
// Contract: `alloc` is int(void** ptr, size_t bytes, unsigned flags) and `free` is
// int(void* ptr), 0 meaning success (cudaHostAlloc's and cudaFreeHost's signatures); both are
// called from any thread. A failed allocation throws std::runtime_error naming the size and
// the returned code (the batch that needed it fails; the worker lives on). A buffer is freed
// when the pool and every tensor viewing it let it go.

#include <cstdint>

#include "stoker/pipeline/host_allocator.h"

namespace stoker::python {

HostAllocator pinned_host_allocator(uintptr_t alloc, uintptr_t free);

}  // namespace stoker::python
