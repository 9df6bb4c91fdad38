#include "stoker/train/input_normalizer.h"

#include <torch/types.h>

namespace stoker {
namespace {

// [1, C, 1, ...] so that it broadcasts over a batch of samples shaped `sample_shape`.
at::Tensor per_channel(const std::vector<float>& values, const std::vector<int64_t>& sample_shape,
                       const c10::Device& device) {
  std::vector<int64_t> shape(sample_shape.size() + 1, 1);
  if (sample_shape.size() == 3) shape[1] = static_cast<int64_t>(values.size());
  return torch::tensor(values, torch::kFloat32).view(shape).to(device);
}

Normalization make_normalization(const std::vector<int64_t>& sample_shape,
                                 const std::vector<float>& mean, const std::vector<float>& std) {
  Result<Normalization> n = Normalization::create(sample_shape, mean, std);
  if (!n.is_ok()) throw Error(invalid_argument("input normalisation: " + n.status().message()));
  return std::move(n).value();
}

}  // namespace

InputNormalizer::InputNormalizer(std::vector<int64_t> sample_shape, const std::vector<float>& mean,
                                 const std::vector<float>& std, int64_t max_batch,
                                 c10::Device device)
    : sample_shape_(std::move(sample_shape)),
      normalization_(make_normalization(sample_shape_, mean, std)),
      device_(device) {
  std::vector<int64_t> shape = {max_batch};
  shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
  if (device_.is_cpu()) {
    buffer_ = torch::empty(shape, torch::kFloat32);
  } else {
    divisor_ = torch::full({}, 255.0f, torch::kFloat32).to(device_);
    mean_ = per_channel(normalization_.mean(), sample_shape_, device_);
    std_ = per_channel(normalization_.stddev(), sample_shape_, device_);
  }
}

at::Tensor InputNormalizer::operator()(const at::Tensor& images) {
  TORCH_CHECK(images.scalar_type() == at::kByte && images.is_contiguous() && images.dim() >= 1 &&
                  images.sizes().slice(1) == c10::IntArrayRef(sample_shape_),
              "InputNormalizer needs contiguous uint8 images [N, ", c10::IntArrayRef(sample_shape_),
              "], not ", images.scalar_type(), " ", images.sizes());
  const int64_t n = images.size(0);
  if (!device_.is_cpu()) {
    // Tensors on the device, not scalars: torch divides by a CPU scalar on CUDA as a product
    // with its reciprocal, which is not the workers' (torchvision's) division.
    return images.to(device_, /*non_blocking=*/true)
        .to(torch::kFloat32)
        .div_(divisor_)
        .sub_(mean_)
        .div_(std_);
  }
  TORCH_CHECK(images.is_cpu(), "InputNormalizer: images on ", images.device(), ", not the CPU");
  TORCH_CHECK(n <= buffer_.size(0), "InputNormalizer: batch of ", n, " > max_batch ",
              buffer_.size(0));
  normalization_.apply(images.data_ptr<uint8_t>(), buffer_.data_ptr<float>(),
                       static_cast<size_t>(n));
  // Written behind autograd's back: a graph that still held the previous input now fails
  // loudly ("modified by an inplace operation") instead of reading new values.
  torch::autograd::impl::bump_version(buffer_);
  return buffer_.narrow(0, 0, n);
}

}  // namespace stoker
