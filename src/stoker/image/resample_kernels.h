#pragma once
// The two implementations of Resampler (resample.h): the scalar reference and the SIMD one
// (Highway, dispatched at run time). Both run PIL's two passes over the same taps
// (resample_filter.h) and write identical bytes.

#include <cstdint>
#include <vector>

#include "stoker/image/resample_filter.h"
#include "stoker/image/rgb_view.h"

namespace stoker::image {

// One resample, checked by Resampler: taps for both axes computed, `dst` room for the sample.
struct ResampleJob {
  RgbView src;
  const AxisTaps* horizontal = nullptr;  // output columns from source columns
  const AxisTaps* vertical = nullptr;    // output rows from source rows
  int width = 0;                         // output size
  int height = 0;
  bool flip = false;
  bool to_float = false;  // float32 v * scale[c] + bias[c]; else uint8 v
  float scale[3] = {1, 1, 1};
  float bias[3] = {0, 0, 0};
  uint8_t* dst = nullptr;
};

// PIL's rounding of a fixed-point sum (which starts at 2^21) to a pixel value.
inline uint8_t clip_pixel(int32_t sum) {
  const int32_t v = sum >> kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// The reference: plain loops, one output value at a time. `rows` is scratch for the
// horizontally resized rows.
void resample_scalar(const ResampleJob& job, std::vector<uint8_t>& rows);

}  // namespace stoker::image
