#include "stoker/python/pinned_allocator.h"

#include <memory>
#include <stdexcept>
#include <string>

namespace stoker::python {

HostAllocator pinned_host_allocator(uintptr_t alloc, uintptr_t free) {
  using AllocFn = int (*)(void**, size_t, unsigned int);
  using FreeFn = int (*)(void*);
  const auto alloc_fn = reinterpret_cast<AllocFn>(alloc);
  const auto free_fn = reinterpret_cast<FreeFn>(free);
  return [alloc_fn, free_fn](size_t bytes) {
    void* p = nullptr;
    const int code = alloc_fn(&p, bytes, /*flags: cudaHostAllocDefault*/ 0u);
    if (code != 0 || p == nullptr)
      throw std::runtime_error("pinned host memory: allocating " + std::to_string(bytes) +
                               " bytes failed (CUDA error " + std::to_string(code) + ")");
    return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [free_fn](uint8_t* q) {
      free_fn(q);  // a deleter cannot report; the runtime logs its own errors
    });
  };
}

}  // namespace stoker::python
