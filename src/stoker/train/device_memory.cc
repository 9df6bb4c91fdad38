#include "stoker/train/device_memory.h"

// STOKER_WITH_CUDA: set by src/stoker/train/CMakeLists.txt when the LibTorch has CUDA.
#ifdef STOKER_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace stoker {
#ifdef STOKER_WITH_CUDA
namespace {

// "cuda" without an index is the current device.
c10::DeviceIndex index_of(const c10::Device& device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}

}  // namespace
#endif

std::optional<int64_t> device_memory_peak(const c10::Device& device) {
#ifdef STOKER_WITH_CUDA
  if (device.is_cuda()) {
    // allocated_bytes[0]: the aggregate over the allocator's pools.
    return c10::cuda::CUDACachingAllocator::getDeviceStats(index_of(device))
        .allocated_bytes[0]
        .peak;
  }
#else
  (void)device;
#endif
  return std::nullopt;
}

void reset_device_memory_peak(const c10::Device& device) {
#ifdef STOKER_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(index_of(device));
#else
  (void)device;
#endif
}

}  // namespace stoker
