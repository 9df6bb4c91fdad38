#include "stoker/pipeline/loader.h"

#include "stoker/pipeline/device_feed.h"

namespace stoker {
namespace {

at::ScalarType scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return at::kByte;
    case DType::kInt64:
      return at::kLong;
    case DType::kFloat32:
      return at::kFloat;
    case DType::kBytes:
      break;
  }
  throw Error(invalid_argument("bytes fields have no tensor type"));
}

}  // namespace

const at::Tensor& Batch::operator[](const std::string& name) const {
  for (size_t i = 0; i < host_.fields.size(); ++i) {
    if (host_.fields[i].name == name) return tensors_[i];
  }
  throw Error(invalid_argument("the batch has no field '" + name + "'"));
}

std::map<std::string, at::Tensor> Batch::clone() const {
  std::map<std::string, at::Tensor> out;
  for (size_t i = 0; i < host_.fields.size(); ++i) out[host_.fields[i].name] = tensors_[i].clone();
  return out;
}

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, torch::Device device)
    : device_(device),
      feed_(std::make_unique<DeviceFeed>(device)),
      core_(std::move(dataset), std::move(options), feed_->host_allocator()) {}

Loader::~Loader() = default;

EpochRange Loader::epoch(int64_t e) { return EpochRange(*this, core_.epoch(e)); }

EpochRange::EpochRange(Loader& loader, LoaderCore::Epoch epoch)
    : loader_(&loader), epoch_(std::move(epoch)) {}

EpochRange::Iterator EpochRange::begin() {
  if (!started_) {
    started_ = true;
    advance();
  }
  return Iterator(this);
}

void EpochRange::advance() {
  current_.tensors_.clear();  // the previous batch's buffer may go back to the pool
  current_.host_.owner.reset();
  if (!epoch_.next(current_.host_)) {
    current_.host_ = HostBatch();
    done_ = true;
    return;
  }
  const HostBatch& host = current_.host_;
  std::vector<at::Tensor> tensors;
  for (const HostField& f : host.fields) {
    std::shared_ptr<const void> owner = host.owner;
    tensors.push_back(at::from_blob(
        f.data, f.shape, f.strides, [owner](void*) {}, at::TensorOptions(scalar_type(f.dtype))));
  }
  current_.tensors_ = loader_->feed_->to_device(std::move(tensors));
}

}  // namespace stoker
