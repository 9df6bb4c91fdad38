#include <cstddef>
#include <cstring>

#include "stoker/image/resample_kernels.h"

namespace stoker::image {

void resample_scalar(const ResampleJob& job, std::vector<uint8_t>& rows) {
  const AxisTaps& h = *job.horizontal;
  const AxisTaps& v = *job.vertical;
  const int row_begin = v.source_begin(), row_end = v.source_end();
  const size_t row_bytes = static_cast<size_t>(job.width) * 3;
  rows.resize((row_end - row_begin) * row_bytes);
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

  // Horizontal pass over the source rows the vertical pass reads.
  for (int y = row_begin; y < row_end; ++y) {
    const uint8_t* in = job.src.row(y);
    uint8_t* out = &rows[(y - row_begin) * row_bytes];
    for (int x = 0; x < job.width; ++x) {
      const int32_t* w = &h.weights[static_cast<size_t>(x) * h.stride];
      const uint8_t* p = in + h.first[x] * 3;
      for (int c = 0; c < 3; ++c) {
        int32_t sum = kHalf;
        for (int t = 0; t < h.count[x]; ++t) sum += p[t * 3 + c] * w[t];
        out[x * 3 + c] = clip_pixel(sum);
      }
    }
  }

  // Vertical pass, flip, and the CHW write.
  const size_t plane = static_cast<size_t>(job.width) * job.height;
  for (int y = 0; y < job.height; ++y) {
    const int32_t* w = &v.weights[static_cast<size_t>(y) * v.stride];
    const uint8_t* in = &rows[(v.first[y] - row_begin) * row_bytes];
    for (int x = 0; x < job.width; ++x) {
      const size_t at = static_cast<size_t>(y) * job.width + (job.flip ? job.width - 1 - x : x);
      for (int c = 0; c < 3; ++c) {
        int32_t sum = kHalf;
        for (int t = 0; t < v.count[y]; ++t) sum += in[t * row_bytes + x * 3 + c] * w[t];
        const uint8_t value = clip_pixel(sum);
        if (job.to_float) {
          const float f = static_cast<float>(value) * job.scale[c] + job.bias[c];
          std::memcpy(job.dst + (c * plane + at) * sizeof(float), &f, sizeof(float));
        } else {
          job.dst[c * plane + at] = value;
        }
      }
    }
  }
}

}  // namespace stoker::image
