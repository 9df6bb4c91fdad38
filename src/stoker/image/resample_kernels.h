#pragma once
// The two implementations of Resampler (resample.h): the scalar reference and the SIMD one
// (Highway, dispatched at run time). Both run PIL's two passes over the same taps
// (resample_filter.h) and write identical bytes.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "stoker/image/float_pixel.h"
#include "stoker/image/resample_filter.h"
#include "stoker/image/rgb_row_source.h"
#include "stoker/image/rgb_view.h"
#include "stoker/util/status.h"

namespace stoker::image {

// One resample, checked by Resampler: taps for both axes computed, `dst` room for the sample.
// The source is `src`, or, when `stream` is set, the rows read from it (all of them, top to
// bottom; `src` then only has its width and height).
struct ResampleJob {
  RgbView src;
  RgbRowSource* stream = nullptr;
  const AxisTaps* horizontal = nullptr;  // output columns from source columns
  const AxisTaps* vertical = nullptr;    // output rows from source rows
  int width = 0;                         // output size
  int height = 0;
  bool flip = false;
  bool to_float = false;  // float32 float_pixel(v, unit, mean[c], std[c]); else uint8 v
  UnitScale unit = UnitScale::kDivide;
  float mean[3] = {0, 0, 0};
  float std[3] = {1, 1, 1};
  uint8_t* dst = nullptr;
};

// PIL's rounding of a fixed-point sum (which starts at half of 2^precision) to a pixel value.
inline uint8_t clip_pixel(int32_t sum, int precision) {
  const int32_t v = sum >> precision;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// PIL's value of one output: the taps' weighted sum of the bytes at p, p + step, ...
inline uint8_t filter_bytes(const uint8_t* p, size_t step, const int32_t* w, int count,
                            int precision) {
  int32_t sum = 1 << (precision - 1);
  for (int t = 0; t < count; ++t) sum += p[t * step] * w[t];
  return clip_pixel(sum, precision);
}

// Writes `value` of channel `c` at element `at` of its plane (row * width + column).
inline void write_value(const ResampleJob& job, int c, size_t at, uint8_t value) {
  const size_t index = static_cast<size_t>(c) * job.width * job.height + at;
  if (job.to_float) {
    const float f = float_pixel(value, job.unit, job.mean[c], job.std[c]);
    std::memcpy(job.dst + index * sizeof(float), &f, sizeof(float));
  } else {
    job.dst[index] = value;
  }
}

// The reference: plain loops, one output value at a time. `rows` is scratch for the
// horizontally resized rows, `source` for a stream's rows (all read first). Fails only when the
// stream does.
Status resample_scalar(const ResampleJob& job, std::vector<uint8_t>& rows,
                       std::vector<uint8_t>& source);

// The SIMD kernel's buffers, grown as needed.
struct SimdScratch {
  std::vector<uint8_t> ring;    // a stream's group of source rows
  std::vector<uint8_t> packed;  // a group of source rows, interleaved pixel by pixel as RGBX
  std::vector<uint8_t> rgbx;    // a group's resized rows as RGBX, no longer interleaved
  std::vector<uint8_t> group;   // a group's horizontally resized rows, interleaved
  std::vector<uint8_t> rows;    // the vertical filter's reach of resized rows, as planes
  std::vector<uint8_t> source;  // the scalar fallback's (Highway without SIMD)
};

// The same result with the best SIMD instruction set of this CPU (Highway dynamic dispatch).
Status resample_simd(const ResampleJob& job, SimdScratch& scratch);

// The name of the instruction set resample_simd uses on this CPU ("AVX2", "AVX3", ...).
const char* simd_target_name();

}  // namespace stoker::image
