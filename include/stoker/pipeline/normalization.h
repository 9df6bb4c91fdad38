#pragma once
// Normalization: uint8 samples to float32 (unit(x) - mean[c]) / std[c], unit(x) x / 255 or
// x * float32(1 / 255): torchvision's float32 values bit for bit (image/float_pixel.h), the one
// normalisation shared by the loader's workers (a field transform) and the trainer
// (InputNormalizer), computed by the vectorised kernel (SSE2 or AVX2, picked at run time).
// Channels are dim 0 of a [C,H,W] sample; any other shape is one channel. Immutable:
// thread-safe.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoker/image/float_pixel.h"
#include "stoker/util/status.h"

namespace stoker {

class Normalization {
 public:
  // For samples of `sample_shape` with `mean` and `std` of one value each or one per channel;
  // every std non-zero and finite. Errors are kInvalidArgument (the caller adds the field).
  static Result<Normalization> create(const std::vector<int64_t>& sample_shape,
                                      const std::vector<float>& mean, const std::vector<float>& std,
                                      image::UnitScale unit = image::UnitScale::kDivide);

  // Writes `n` samples stored back to back at `src` (uint8) into `dst` (float32).
  void apply(const uint8_t* src, float* dst, size_t n) const;

  // Normalising runs over consecutive elements: one per channel, or a single run over the
  // sample when one mean and std serve every channel.
  int64_t run_elements() const { return run_elements_; }
  const std::vector<float>& mean() const { return mean_; }   // per run
  const std::vector<float>& stddev() const { return std_; }  // per run
  image::UnitScale unit() const { return unit_; }
  int64_t sample_elements() const { return run_elements_ * static_cast<int64_t>(mean_.size()); }

 private:
  int64_t run_elements_ = 0;
  std::vector<float> mean_;
  std::vector<float> std_;
  image::UnitScale unit_ = image::UnitScale::kDivide;
};

}  // namespace stoker
