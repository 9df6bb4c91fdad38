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

// A view of `data` keeping `owner` alive.
at::Tensor view(void* data, at::IntArrayRef shape, at::IntArrayRef strides, DType dtype,
                std::shared_ptr<const void> owner) {
  return at::from_blob(
      data, shape, strides, [owner](void*) {}, at::TensorOptions(scalar_type(dtype)));
}

// A field's tensor on the host: undefined for a list-laid variable field (no one tensor).
at::Tensor host_tensor(const HostField& f, const std::shared_ptr<const void>& owner) {
  if (f.sizes && !f.padded) return at::Tensor();
  return view(f.data, f.shape, f.strides, f.dtype, owner);
}

[[noreturn]] void throw_list_laid(const std::string& name) {
  throw Error(invalid_argument("field '" + name +
                               "' varies in size and is laid out as a list: use samples()"));
}

}  // namespace

size_t Batch::index_of(const std::string& name) const {
  for (size_t i = 0; i < host_.fields.size(); ++i) {
    if (host_.fields[i].name == name) return i;
  }
  throw Error(invalid_argument("the batch has no field '" + name + "'"));
}

const at::Tensor& Batch::operator[](const std::string& name) const {
  const size_t i = index_of(name);
  if (!tensors_[i].defined()) throw_list_laid(name);
  return tensors_[i];
}

at::Tensor Batch::host(const std::string& name) const {
  at::Tensor tensor = host_tensor(host_.fields[index_of(name)], host_.owner);
  if (!tensor.defined()) throw_list_laid(name);
  return tensor;
}

std::vector<at::Tensor> Batch::samples(const std::string& name) const {
  const HostField& f = host_.fields[index_of(name)];
  if (!f.sizes) throw Error(invalid_argument("field '" + name + "' is fixed-size"));
  const size_t rank = f.shape.size() - 1;
  std::vector<at::Tensor> out;
  for (int64_t k = 0; k < host_.size; ++k) {
    const std::vector<int64_t> shape(f.sizes + k * rank, f.sizes + (k + 1) * rank);
    std::vector<int64_t> strides(f.strides.begin() + 1, f.strides.end());  // padded: the grid's
    if (!f.padded) {
      for (size_t d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * shape[d];
    }
    out.push_back(view(static_cast<uint8_t*>(f.data) + k * f.strides[0] * dtype_size(f.dtype),
                       shape, strides, f.dtype, host_.owner));
  }
  return out;
}

at::Tensor Batch::sizes(const std::string& name) const {
  const HostField& f = host_.fields[index_of(name)];
  if (!f.sizes) throw Error(invalid_argument("field '" + name + "' is fixed-size"));
  const auto rank = static_cast<int64_t>(f.shape.size() - 1);
  return view(const_cast<int64_t*>(f.sizes), {host_.size, rank}, {rank, 1}, DType::kInt64,
              host_.owner);
}

std::map<std::string, at::Tensor> Batch::clone() const {
  std::map<std::string, at::Tensor> out;
  for (size_t i = 0; i < host_.fields.size(); ++i) {
    if (tensors_[i].defined()) out[host_.fields[i].name] = tensors_[i].clone();
  }
  return out;
}

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, torch::Device device)
    : device_(device),
      feed_(std::make_unique<DeviceFeed>(device)),
      core_(std::move(dataset), std::move(options), feed_->host_allocator()) {
  for (const BatchField& f : core_.layout().fields()) {
    if (f.variable && !device.is_cpu())
      throw Error(invalid_argument("field '" + f.name +
                                   "' varies in size: it is delivered on the CPU only for now"));
  }
}

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
  for (const HostField& f : host.fields) tensors.push_back(host_tensor(f, host.owner));
  current_.tensors_ = loader_->feed_->to_device(std::move(tensors));
}

}  // namespace stoker
