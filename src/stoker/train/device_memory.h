#pragma once
// The device memory a run uses, as LibTorch's CUDA caching allocator counts it (what
// torch.cuda.max_memory_allocated reports): the peak of the bytes held by live tensors on one
// device since the last reset. CUDA only: on the CPU, or where this stoker was built against a
// LibTorch without CUDA, there is nothing to count. Call from the training thread.

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>

namespace stoker {

// The peak bytes allocated on `device` since reset_device_memory_peak(device) (or since the
// process began); nullopt for a device that is not CUDA or a build without CUDA.
std::optional<int64_t> device_memory_peak(const c10::Device& device);

// Starts a new peak for device_memory_peak at what is allocated now; nothing for a device that
// is not CUDA or a build without CUDA.
void reset_device_memory_peak(const c10::Device& device);

}  // namespace stoker
