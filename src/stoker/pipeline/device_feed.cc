#include "stoker/pipeline/device_feed.h"

#include <ATen/ops/from_blob.h>

namespace stoker {

DeviceFeed::DeviceFeed(torch::Device device) : device_(device) {
  if (!device_.is_cuda()) return;
  cuda_ = std::make_shared<C10Device>(device_);
  protocol_ = std::make_unique<FeedProtocol>(cuda_, /*max_in_flight=*/2);
}

HostAllocator DeviceFeed::host_allocator() const {
  return cuda_ ? cuda_->host_allocator() : default_host_allocator();
}

std::vector<at::Tensor> DeviceFeed::to_device(std::vector<at::Tensor> host) {
  if (!protocol_) return host;
  FeedInput input;
  for (const at::Tensor& t : host) {
    TORCH_CHECK(t.is_contiguous(), "DeviceFeed: a batch field is not contiguous");
    input.fields.push_back({t.data_ptr(), t.nbytes()});
  }
  input.owner = std::make_shared<const std::vector<at::Tensor>>(host);
  const DeviceBatch batch = protocol_->deliver(protocol_->start(std::move(input)));
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < host.size(); ++i) {
    std::shared_ptr<const void> memory = batch.memory;
    out.push_back(at::from_blob(
        batch.fields[i], host[i].sizes(), host[i].strides(), [memory](void*) {},
        host[i].options().device(device_)));
  }
  return out;
}

}  // namespace stoker
