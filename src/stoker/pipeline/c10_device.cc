#include "stoker/pipeline/c10_device.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>

#include <cstdint>
#include <thread>

namespace stoker {
namespace {

c10::Event& event_of(const DeviceEvent& event) { return *static_cast<c10::Event*>(event.id.get()); }

c10::Device with_index(const c10::impl::VirtualGuardImpl& guard, c10::Device device) {
  return device.has_index() ? device : c10::Device(device.type(), guard.getDevice().index());
}

}  // namespace

C10Device::C10Device(c10::Device device)
    : guard_(device.type()),
      device_(with_index(guard_, device)),
      copy_(guard_.getStreamFromGlobalPool(device_, /*isHighPriority=*/false)) {}

HostAllocator C10Device::host_allocator() {
  return [](size_t bytes) {
    at::Tensor pinned =
        at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions(at::kByte).pinned_memory(true));
    auto* data = pinned.data_ptr<uint8_t>();
    return std::shared_ptr<uint8_t>(data, [pinned](uint8_t*) mutable { pinned.reset(); });
  };
}

DeviceStream C10Device::consumer_stream() { return handle_of(guard_.getStream(device_)); }

DeviceStream C10Device::copy_stream() { return handle_of(copy_); }

DeviceEvent C10Device::record(DeviceStream stream) {
  auto event = std::make_shared<c10::Event>(device_.type());
  event->record(stream_of(stream));
  return {std::move(event)};
}

bool C10Device::query(const DeviceEvent& event) { return event_of(event).query(); }

void C10Device::synchronize(const DeviceEvent& event) {
  // c10::Event::synchronize() arrives only in LibTorch 2.x.
  while (!event_of(event).query()) std::this_thread::yield();
}

void C10Device::wait(DeviceStream stream, const DeviceEvent& event) {
  event_of(event).block(stream_of(stream));
}

DeviceMemory C10Device::allocate(size_t bytes, DeviceStream stream) {
  c10::StreamGuard on(stream_of(stream));
  auto memory = std::make_shared<at::Tensor>(
      at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions(at::kByte).device(device_)));
  return {memory->data_ptr(), bytes, memory};
}

void C10Device::free_after(DeviceMemory memory, DeviceStream stream) noexcept {
  try {
    // The caching allocator reuses the block once `stream`'s work queued so far completed.
    static_cast<at::Tensor*>(memory.id.get())->record_stream(stream_of(stream));
  } catch (...) {
    // A deleter cannot report; the block is freed in its allocation stream's order.
  }
}

void C10Device::copy_to_device(const DeviceMemory& dst, const void* src, size_t bytes,
                               DeviceStream stream) {
  c10::StreamGuard on(stream_of(stream));
  const auto size = static_cast<int64_t>(bytes);
  at::Tensor to = at::from_blob(dst.data, {size}, at::TensorOptions(at::kByte).device(device_));
  to.copy_(at::from_blob(const_cast<void*>(src), {size}, at::kByte), /*non_blocking=*/true);
}

c10::Stream C10Device::stream_of(DeviceStream stream) const {
  return c10::Stream(c10::Stream::UNSAFE, device_,
                     static_cast<c10::StreamId>(reinterpret_cast<intptr_t>(stream.id)));
}

DeviceStream C10Device::handle_of(const c10::Stream& stream) {
  return {reinterpret_cast<void*>(static_cast<intptr_t>(stream.id()))};
}

}  // namespace stoker
