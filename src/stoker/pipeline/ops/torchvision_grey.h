#pragma once
// torchvision's grey level of an RGB pixel of a uint8 image (transforms.v2.functional's
// rgb_to_grayscale): r * 0.2989, then + g * 0.587 and + b * 0.114 as fused multiply-adds in
// float32 (ATen's vectorised add with alpha), unrounded: rgb_to_grayscale truncates it to
// uint8, adjust_contrast floors it. Each fused step is exact in double, so one rounding to float
// gives fma's result. Pure.

#include <cstdint>

namespace stoker::ops {

inline float torchvision_grey(uint8_t r, uint8_t g, uint8_t b) {
  const float red = static_cast<float>(r * static_cast<double>(0.2989f));
  const float green = static_cast<float>(g * static_cast<double>(0.587f) + red);
  return static_cast<float>(b * static_cast<double>(0.114f) + green);
}

}  // namespace stoker::ops
