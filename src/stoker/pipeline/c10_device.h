#pragma once
// C10Device: DeviceApi (device_api.h) over LibTorch's generic device API: c10 streams and
// events, device memory from the caching allocator (at::empty, kept from reuse by
// record_stream), non_blocking copies, pinned host memory. The trainer's DeviceFeed runs
// FeedProtocol on it. The source is device-agnostic: with a CUDA LibTorch it drives CUDA; the
// CPU-only LibTorch compiles it, and constructing it there throws (no CUDA device type).
// Thread-safety: as DeviceApi.

#include <c10/core/Device.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "stoker/pipeline/device_api.h"

namespace stoker {

class C10Device : public DeviceApi {
 public:
  // On `device`; without an index, the current one of its type.
  explicit C10Device(c10::Device device);

  HostAllocator host_allocator() override;
  // The current stream of the device when called.
  DeviceStream consumer_stream() override;
  // A stream of LibTorch's pool, chosen once.
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
  c10::Stream stream_of(DeviceStream stream) const;
  static DeviceStream handle_of(const c10::Stream& stream);

  const c10::impl::VirtualGuardImpl guard_;
  const c10::Device device_;
  const c10::Stream copy_;
};

}  // namespace stoker
