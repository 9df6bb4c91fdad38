#pragma once
// DeviceFeed: the device stage of the loader. On the CPU it is the identity. For a CUDA device
// batches are built in pinned host buffers and copied with non_blocking copies on a side
// stream; the consumer's current stream waits on an event recorded after the copies, so the
// copy of batch k+1 overlaps the GPU work already queued for batch k. The CUDA branch compiles
// against the CPU-only LibTorch and is never entered there (pinned memory throws on it).
// Not thread-safe: used by the consumer thread.

#include <c10/core/Event.h>
#include <torch/types.h>

#include <deque>
#include <utility>
#include <vector>

#include "stoker/pipeline/batch_buffer.h"

namespace stoker {

class DeviceFeed {
 public:
  explicit DeviceFeed(torch::Device device);
  // Waits for the copies still reading pinned host buffers.
  ~DeviceFeed();

  // Host memory for batch buffers: pinned for CUDA, plain aligned memory otherwise.
  HostAllocator host_allocator() const;
  // The tensors on the device, usable on the current stream. CPU tensors pass through.
  std::vector<at::Tensor> to_device(std::vector<at::Tensor> host);

 private:
  torch::Device device_;
  // Host tensors (views of pooled pinned buffers) of copies that may still be running, with the
  // event that ends them: a buffer must not return to the pool, where a worker rewrites it,
  // before the DMA has read it.
  std::deque<std::pair<c10::Event, std::vector<at::Tensor>>> in_flight_;
};

}  // namespace stoker
