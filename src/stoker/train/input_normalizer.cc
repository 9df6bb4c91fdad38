#include "stoker/train/input_normalizer.h"

#include <torch/torch.h>

namespace stoker {
namespace {

// [1, C, 1, ...] so that it broadcasts over a batch of samples shaped `sample_shape`.
at::Tensor per_channel(const std::vector<float>& values, const BatchField& field,
                       const c10::Device& device) {
  std::vector<int64_t> shape(field.sample_shape.size() + 1, 1);
  if (field.sample_shape.size() == 3) shape[1] = static_cast<int64_t>(values.size());
  return torch::tensor(values, torch::kFloat32).view(shape).to(device);
}

}  // namespace

InputNormalizer::InputNormalizer(const Schema& schema, const std::string& field,
                                 const std::vector<float>& mean, const std::vector<float>& std,
                                 int64_t max_batch, c10::Device device)
    : layout_(BatchLayout::create(schema, {FieldRequest(field, true, mean, std)}).value_or_throw()),
      device_(device) {
  const BatchField& f = layout_.fields()[0];
  std::vector<int64_t> shape = {max_batch};
  shape.insert(shape.end(), f.sample_shape.begin(), f.sample_shape.end());
  if (device_.is_cpu()) {
    buffer_ = torch::empty(shape, torch::kFloat32);
  } else {
    scale_ = per_channel(f.scale, f, device_);
    bias_ = per_channel(f.bias, f, device_);
  }
}

at::Tensor InputNormalizer::operator()(const at::Tensor& images) {
  const BatchField& f = layout_.fields()[0];
  TORCH_CHECK(images.scalar_type() == at::kByte && images.is_contiguous() && images.dim() >= 1 &&
                  images.sizes().slice(1) == c10::IntArrayRef(f.sample_shape),
              "InputNormalizer needs contiguous uint8 images [N, ",
              c10::IntArrayRef(f.sample_shape), "], not ", images.scalar_type(), " ",
              images.sizes());
  const int64_t n = images.size(0);
  if (!device_.is_cpu()) {
    return images.to(device_, /*non_blocking=*/true).to(torch::kFloat32).mul_(scale_).add_(bias_);
  }
  TORCH_CHECK(images.is_cpu(), "InputNormalizer: images on ", images.device(), ", not the CPU");
  TORCH_CHECK(n <= buffer_.size(0), "InputNormalizer: batch of ", n, " > max_batch ",
              buffer_.size(0));
  layout_.write_samples(0, images.data_ptr<uint8_t>(), static_cast<size_t>(n),
                        reinterpret_cast<uint8_t*>(buffer_.data_ptr<float>()));
  // Written behind autograd's back: a graph that still held the previous input now fails
  // loudly ("modified by an inplace operation") instead of reading new values.
  torch::autograd::impl::bump_version(buffer_);
  return buffer_.narrow(0, 0, n);
}

}  // namespace stoker
