#pragma once
// Turns a batch of uint8 images into the model's float input, (x / 255 - mean) / std per
// channel in torchvision's float32 operations (image/float_pixel.h), on the model's device. The
// trainer's loader delivers images as stored (uint8) and this does the normalisation where the
// model runs:
// - on CUDA, after the copy: a quarter of the bytes cross the bus (the usual advice);
// - on the CPU, on the training thread, into one float buffer that is reused every step, so
//   the step reads its input from its own cache and only a quarter of the bytes arrive from
//   the loader's core (docs/BENCHMARKS.md: `stoker bench train` before and after, and a
//   one-off comparison of the two ways).

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "stoker/pipeline/normalization.h"

namespace stoker {

class InputNormalizer {
 public:
  // For uint8 samples of `sample_shape` ([C,H,W] or any other shape as one channel) with
  // `mean` and `std` of one value or one per channel (Normalization's rules), batches of up to
  // `max_batch` samples. Throws Error (kInvalidArgument) if those do not fit.
  InputNormalizer(std::vector<int64_t> sample_shape, const std::vector<float>& mean,
                  const std::vector<float>& std, int64_t max_batch, c10::Device device);

  // `images`: uint8 [N, sample shape...], N <= max_batch, on the CPU or on the device. Returns
  // float32 [N, sample shape...] on the device. On the CPU the result is a view of a buffer that
  // the next call overwrites: use it before calling again (a training step does).
  at::Tensor operator()(const at::Tensor& images);
  const std::vector<int64_t>& sample_shape() const { return sample_shape_; }

 private:
  std::vector<int64_t> sample_shape_;
  Normalization normalization_;  // the loader's own: the same values bit for bit
  c10::Device device_;
  at::Tensor buffer_;   // CPU: [max_batch, sample shape...] float32
  at::Tensor divisor_;  // CUDA: 255, 0-d, on the device (x / 255: ToTensor's)
  at::Tensor mean_;     // CUDA: [1, C, 1...] float32 on the device
  at::Tensor std_;
};

}  // namespace stoker
