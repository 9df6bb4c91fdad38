#pragma once
// CudaDevice: DeviceApi (device_api.h) over the CUDA runtime: a non-blocking copy stream of its
// own, events without timing, stream-ordered device memory (cudaMallocAsync, cudaFreeAsync),
// page-locked host memory (cudaHostAlloc). The thin layer under FeedProtocol on a GPU, the one
// part of the protocol the simulation does not run; built where CMake finds the CUDA toolkit,
// run by cuda_device_test on a GPU. Each call names what failed in a std::runtime_error.
// Thread-safety: as DeviceApi (the runtime's calls are thread-safe).

#include <cuda_runtime.h>

#include "stoker/pipeline/device_api.h"

namespace stoker {

class CudaDevice : public DeviceApi {
 public:
  // On GPU `index`; the consumer's kernels are queued on `consumer` (nullptr: the legacy
  // default stream).
  CudaDevice(int index, cudaStream_t consumer);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  HostAllocator host_allocator() override;
  DeviceStream consumer_stream() override;
  DeviceStream copy_stream() override;
  DeviceEvent record(DeviceStream stream) override;
  bool query(const DeviceEvent& event) override;
  void synchronize(const DeviceEvent& event) override;
  void wait(DeviceStream stream, const DeviceEvent& event) override;
  DeviceMemory allocate(size_t bytes, DeviceStream stream) override;
  void free_after(DeviceMemory memory, DeviceStream stream) noexcept override;
  void copy_to_device(const DeviceMemory& dst, const void* src, size_t bytes,
                      DeviceStream stream) override;

 private:
  const int index_;
  const cudaStream_t consumer_;
  cudaStream_t copy_ = nullptr;
};

}  // namespace stoker
