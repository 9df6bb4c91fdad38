#include "stoker/pipeline/cuda_device.h"

#include <stdexcept>
#include <string>

namespace stoker {
namespace {

void check(cudaError_t code, const char* call) {
  if (code != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA: ") + call + " failed: " + cudaGetErrorString(code));
  }
}

cudaStream_t stream_of(DeviceStream stream) { return static_cast<cudaStream_t>(stream.id); }

cudaEvent_t event_of(const DeviceEvent& event) { return static_cast<cudaEvent_t>(event.id.get()); }

// Makes `index` the calling thread's current GPU until destroyed.
class CurrentGpu {
 public:
  explicit CurrentGpu(int index) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    check(cudaSetDevice(index), "cudaSetDevice");
  }
  ~CurrentGpu() { cudaSetDevice(previous_); }
  CurrentGpu(const CurrentGpu&) = delete;
  CurrentGpu& operator=(const CurrentGpu&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace

CudaDevice::CudaDevice(int index, cudaStream_t consumer) : index_(index), consumer_(consumer) {
  CurrentGpu gpu(index_);
  check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}

CudaDevice::~CudaDevice() { cudaStreamDestroy(copy_); }  // its queued work still completes

HostAllocator CudaDevice::host_allocator() {
  return [](size_t bytes) {
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { cudaFreeHost(q); });
  };
}

DeviceStream CudaDevice::consumer_stream() { return {consumer_}; }

DeviceStream CudaDevice::copy_stream() { return {copy_}; }

DeviceEvent CudaDevice::record(DeviceStream stream) {
  CurrentGpu gpu(index_);
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  std::shared_ptr<void> owned(event,
                              [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
  check(cudaEventRecord(event, stream_of(stream)), "cudaEventRecord");
  return {std::move(owned)};
}

bool CudaDevice::query(const DeviceEvent& event) {
  const cudaError_t code = cudaEventQuery(event_of(event));
  if (code == cudaErrorNotReady) return false;
  check(code, "cudaEventQuery");
  return true;
}

void CudaDevice::synchronize(const DeviceEvent& event) {
  check(cudaEventSynchronize(event_of(event)), "cudaEventSynchronize");
}

void CudaDevice::wait(DeviceStream stream, const DeviceEvent& event) {
  check(cudaStreamWaitEvent(stream_of(stream), event_of(event), 0), "cudaStreamWaitEvent");
}

DeviceMemory CudaDevice::allocate(size_t bytes, DeviceStream stream) {
  void* p = nullptr;
  check(cudaMallocAsync(&p, bytes, stream_of(stream)), "cudaMallocAsync");
  return {p, bytes, nullptr};
}

void CudaDevice::free_after(DeviceMemory memory, DeviceStream stream) noexcept {
  cudaFreeAsync(memory.data, stream_of(stream));  // a deleter cannot report; nor can this
}

void CudaDevice::copy_to_device(const DeviceMemory& dst, const void* src, size_t bytes,
                                DeviceStream stream) {
  check(cudaMemcpyAsync(dst.data, src, bytes, cudaMemcpyHostToDevice, stream_of(stream)),
        "cudaMemcpyAsync");
}

}  // namespace stoker
