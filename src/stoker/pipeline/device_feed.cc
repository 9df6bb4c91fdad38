#include "stoker/pipeline/device_feed.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <thread>

namespace stoker {
namespace {

// Blocks until `event` has completed (c10::Event::synchronize() arrives only in LibTorch 2.x).
void wait_for(const c10::Event& event) {
  while (!event.query()) std::this_thread::yield();
}

}  // namespace

DeviceFeed::DeviceFeed(torch::Device device) : device_(device) {}

DeviceFeed::~DeviceFeed() {
  for (auto& copy : in_flight_) wait_for(copy.first);
}

HostAllocator DeviceFeed::host_allocator() const {
  if (!device_.is_cuda()) return default_host_allocator();
  return [](size_t bytes) {
    at::Tensor pinned =
        at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions(at::kByte).pinned_memory(true));
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
  in_flight_.emplace_back(std::move(copied), std::move(host));
  // Release the buffers of finished copies; never keep more than a few (bounded memory).
  while (in_flight_.size() > 2 || (!in_flight_.empty() && in_flight_.front().first.query())) {
    wait_for(in_flight_.front().first);
    in_flight_.pop_front();
  }
  return out;
}

}  // namespace stoker
