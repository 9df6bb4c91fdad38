#include "stoker/pipeline/normalization.h"

#include <cmath>
#include <string>

#include "stoker/pipeline/normalize_kernel.h"

namespace stoker {

Result<Normalization> Normalization::create(const std::vector<int64_t>& sample_shape,
                                            const std::vector<float>& mean,
                                            const std::vector<float>& std, image::UnitScale unit) {
  const int64_t channels = sample_shape.size() == 3 ? sample_shape[0] : 1;
  int64_t elements = 1;
  for (int64_t d : sample_shape) elements *= d;
  const size_t n = mean.size();
  if (n != std.size() || (n != 1 && static_cast<int64_t>(n) != channels))
    return invalid_argument(
        "mean and std need " +
        (channels == 1 ? std::string("1 value each (one channel: only a [C,H,W] sample has "
                                     "several)")
                       : "1 or " + std::to_string(channels) + " values each"));
  Normalization out;
  out.unit_ = unit;
  const int64_t runs = n == 1 ? 1 : channels;  // one mean and std: one run over the sample
  out.run_elements_ = elements / runs;
  for (int64_t c = 0; c < runs; ++c) {
    const float m = mean[n == 1 ? 0 : c], s = std[n == 1 ? 0 : c];
    if (s == 0.0f || !std::isfinite(s) || !std::isfinite(m))
      return invalid_argument("std must be non-zero and mean and std finite");
    out.mean_.push_back(m);
    out.std_.push_back(s);
  }
  return out;
}

void Normalization::apply(const uint8_t* src, float* dst, size_t n) const {
  if (mean_.size() == 1) {  // one run over all n samples
    normalize_u8(src, dst, run_elements_ * static_cast<int64_t>(n), unit_, mean_[0], std_[0]);
    return;
  }
  for (size_t k = 0; k < n; ++k) {
    for (size_t c = 0; c < mean_.size(); ++c) {
      normalize_u8(src, dst, run_elements_, unit_, mean_[c], std_[c]);
      src += run_elements_;
      dst += run_elements_;
    }
  }
}

}  // namespace stoker
