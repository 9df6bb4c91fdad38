#include "stoker/pipeline/device_feed.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace stoker {

DeviceFeed::DeviceFeed(torch::Device device) : device_(device) {}

HostAllocator DeviceFeed::host_allocator() const {
  if (!device_.is_cuda()) return default_host_allocator();
  return [](size_t bytes) {
    at::Tensor pinned = at::empty({static_cast<int64_t>(bytes)},
                                  at::TensorOptions(at::kByte).pinned_memory(true));
    auto* data = pinned.data_ptr<uint8_t>();
    return std::shared_ptr<uint8_t>(data, [pinned](uint8_t*) mutable { pinned.reset(); });
  };
}

std::vector<at::Tensor> DeviceFeed::to_device(std::vector<at::Tensor> host) {
  if (!device_.is_cuda()) return host;
  c10::impl::VirtualGuardImpl guard_impl(device_.type());
  const c10::Stream consumer = guard_impl.getStream(device_);
  const c10::Stream side = guard_impl.getStreamFromGlobalPool(device_, /*isHighPriority=*/false);
  std::vector<at::Tensor> out;
  {
    c10::StreamGuard on_side(side);
    for (at::Tensor& t : host) out.push_back(t.to(device_, /*non_blocking=*/true));
  }
  c10::Event copied(device_.type());
  copied.record(side);
  copied.block(consumer);
  for (at::Tensor& t : out) t.record_stream(consumer);
  return out;
}

}  // namespace stoker
