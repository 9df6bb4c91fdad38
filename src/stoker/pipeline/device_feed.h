#pragma once
// DeviceFeed: the device stage of the loader. On the CPU it is the identity. For a CUDA device
// batches are built in pinned host buffers and fed through FeedProtocol (feed_protocol.h) on
// LibTorch's streams and events (c10_device.h): non_blocking copies on a side stream, the
// consumer's current stream waiting on an event recorded after them, so the copy of batch k+1
// overlaps the GPU work already queued for batch k; at most two host batches are held for
// copies still reading them. The CUDA branch compiles against the CPU-only LibTorch and is
// never entered there. Not thread-safe: used by the consumer thread.

#include <torch/types.h>

#include <memory>
#include <vector>

#include "stoker/pipeline/c10_device.h"
#include "stoker/pipeline/feed_protocol.h"
#include "stoker/pipeline/host_allocator.h"

namespace stoker {

class DeviceFeed {
 public:
  explicit DeviceFeed(torch::Device device);

  // Host memory for batch buffers: pinned for CUDA, plain aligned memory otherwise.
  HostAllocator host_allocator() const;
  // The tensors on the device, usable on the current stream. CPU tensors pass through.
  std::vector<at::Tensor> to_device(std::vector<at::Tensor> host);

 private:
  torch::Device device_;
  std::shared_ptr<C10Device> cuda_;         // CUDA only
  std::unique_ptr<FeedProtocol> protocol_;  // CUDA only; waits for its copies when destroyed
};

}  // namespace stoker
