#pragma once
// PIL's ImageFilter.GaussianBlur(radius) (libImaging's ImagingGaussianBlur, 3 passes) on a
// uint8 image [C, H, W] in place, each channel alone as PIL's 4-byte pixels are:
//   the box radius r = l + a of the extended box filter for sigma^2 = radius^2 / 3 (Gwosdek et
//   al.; float32 as PIL computes it, its square root and floor in double);
//   3 passes along each row, then 3 along each column, each pass an extended box: with
//   n = int(r), ww = uint32(2^24 / (2r + 1)) (a float32 quotient) and
//   fw = (2^24 - (2n + 1) ww) / 2, out[x] = (ww * sum(in[x - n .. x + n]) +
//   fw * (in[x - n - 1] + in[x + n + 1]) + 2^23) >> 24 in uint32, indices clamped to the line.
// Pure; the including file is built with -ffp-contract=off.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace stoker::ops {

namespace pil_gaussian_blur_detail {

// _gaussian_blur_radius: the extended box's radius for a Gaussian of `radius` over 3 passes.
inline float box_radius(float radius) {
  const float sigma2 = radius * radius / 3;
  const float length = static_cast<float>(std::sqrt(12.0 * static_cast<double>(sigma2) + 1.0));
  const float l = static_cast<float>(std::floor((static_cast<double>(length) - 1.0) / 2.0));
  float a = (2 * l + 1) * (l * (l + 1) - 3 * sigma2);
  a /= 6 * (sigma2 - (l + 1) * (l + 1));
  return l + a;
}

// One pass over `count` values `stride` apart, in place.
inline void box_pass(float radius, uint8_t* line, int64_t count, int64_t stride,
                     std::vector<uint8_t>& scratch) {
  const int64_t n = static_cast<int64_t>(radius);
  const uint32_t ww = static_cast<uint32_t>(static_cast<float>(1 << 24) / (radius * 2 + 1));
  const uint32_t fw = ((1u << 24) - static_cast<uint32_t>(n * 2 + 1) * ww) / 2;
  scratch.resize(static_cast<size_t>(count));
  for (int64_t x = 0; x < count; ++x) scratch[static_cast<size_t>(x)] = line[x * stride];
  const auto at = [&](int64_t x) {
    return static_cast<uint32_t>(
        scratch[static_cast<size_t>(std::clamp<int64_t>(x, 0, count - 1))]);
  };
  for (int64_t x = 0; x < count; ++x) {
    uint32_t sum = 0;
    for (int64_t k = x - n; k <= x + n; ++k) sum += at(k);
    const uint32_t bulk = sum * ww + (at(x - n - 1) + at(x + n + 1)) * fw;
    line[x * stride] = static_cast<uint8_t>((bulk + (1u << 23)) >> 24);
  }
}

}  // namespace pil_gaussian_blur_detail

inline void pil_gaussian_blur(float radius, uint8_t* pixels, int64_t channels, int64_t height,
                              int64_t width) {
  using namespace pil_gaussian_blur_detail;
  if (radius == 0) return;
  const float box = box_radius(radius);
  if (box == 0) return;
  std::vector<uint8_t> scratch;
  for (int64_t c = 0; c < channels; ++c) {
    uint8_t* plane = pixels + c * height * width;
    for (int pass = 0; pass < 3; ++pass)
      for (int64_t y = 0; y < height; ++y) box_pass(box, plane + y * width, width, 1, scratch);
    for (int pass = 0; pass < 3; ++pass)
      for (int64_t x = 0; x < width; ++x) box_pass(box, plane + x, height, width, scratch);
  }
}

}  // namespace stoker::ops
