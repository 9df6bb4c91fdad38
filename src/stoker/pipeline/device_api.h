#pragma once
// DeviceApi: the few operations of an accelerator that the device feed's protocol
// (feed_protocol.h) is written against — streams, events, stream-ordered copies and memory —
// with handles each implementation defines. Implementations: CudaDevice (the CUDA runtime),
// C10Device (LibTorch's generic stream and event API, the trainer's) and SimDevice (a CPU
// simulation that checks the ordering, testing/sim_device.h).
//
// Semantics are CUDA's: work queued on one stream runs in order; streams run independently of
// each other and of the host unless an event orders them. Thread-safety: every function may be
// called from any thread (a device batch is released wherever its last holder lets go).

#include <cstddef>
#include <memory>

#include "stoker/pipeline/host_allocator.h"

namespace stoker {

// A queue of device work (cudaStream_t, a c10 stream, a simulated queue). Not owned.
struct DeviceStream {
  void* id = nullptr;
};

// A point in a stream's work, once recorded. Owned: the handle's deleter destroys it.
struct DeviceEvent {
  std::shared_ptr<void> id;
};

// Device memory: its address and what the implementation needs to free it.
struct DeviceMemory {
  void* data = nullptr;
  size_t bytes = 0;
  std::shared_ptr<void> id;
};

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  // Host memory the device copies from without staging (pinned).
  virtual HostAllocator host_allocator() = 0;
  // The stream the consumer's kernels are queued on now.
  virtual DeviceStream consumer_stream() = 0;
  // A stream of the feed's own for copies, the same on every call.
  virtual DeviceStream copy_stream() = 0;

  // An event recorded at the end of the work queued on `stream` so far.
  virtual DeviceEvent record(DeviceStream stream) = 0;
  // Whether the work before `event` has completed; never blocks.
  virtual bool query(const DeviceEvent& event) = 0;
  // Blocks the calling thread until the work before `event` has completed.
  virtual void synchronize(const DeviceEvent& event) = 0;
  // Work queued on `stream` after this call starts only after `event`'s work has completed.
  virtual void wait(DeviceStream stream, const DeviceEvent& event) = 0;

  // `bytes` of device memory, usable by work queued on `stream` from now on.
  virtual DeviceMemory allocate(size_t bytes, DeviceStream stream) = 0;
  // Frees `memory` once `stream` has passed the work queued on it so far: kernels queued
  // there before this call still read it. Never throws.
  virtual void free_after(DeviceMemory memory, DeviceStream stream) noexcept = 0;
  // Queues a copy of `bytes` from host `src` to `dst` on `stream`; `src` is read when the copy
  // runs, so it must stay unchanged until an event recorded after it has completed.
  virtual void copy_to_device(const DeviceMemory& dst, const void* src, size_t bytes,
                              DeviceStream stream) = 0;
};

}  // namespace stoker
