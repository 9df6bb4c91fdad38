#pragma once
// Normalization: uint8 samples to float32 (x / 255 - mean[c]) / std[c], the one normalisation
// value shared by the loader's workers (a field transform) and the trainer (InputNormalizer).
// Computed as one multiply-add per element, x * scale + bias with scale = 1 / (255 std) and
// bias = -mean / std, by the vectorised kernel (SSE2 or AVX2, picked at run time). Channels
// are dim 0 of a [C,H,W] sample; any other shape is one channel. Immutable: thread-safe.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

class Normalization {
 public:
  // For samples of `sample_shape` with `mean` and `std` of one value each or one per channel;
  // every std non-zero and finite. Errors are kInvalidArgument (the caller adds the field).
  static Result<Normalization> create(const std::vector<int64_t>& sample_shape,
                                      const std::vector<float>& mean,
                                      const std::vector<float>& std);

  // Writes `n` samples stored back to back at `src` (uint8) into `dst` (float32).
  void apply(const uint8_t* src, float* dst, size_t n) const;

  // Normalising runs over consecutive elements: one per channel, or a single run over the
  // sample when one mean and std serve every channel.
  int64_t run_elements() const { return run_elements_; }
  const std::vector<float>& scale() const { return scale_; }  // per run
  const std::vector<float>& bias() const { return bias_; }    // per run
  int64_t sample_elements() const { return run_elements_ * static_cast<int64_t>(scale_.size()); }

 private:
  int64_t run_elements_ = 0;
  std::vector<float> scale_;
  std::vector<float> bias_;
};

}  // namespace stoker
