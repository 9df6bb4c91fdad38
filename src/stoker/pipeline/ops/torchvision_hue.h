#pragma once
// torchvision's hue shift of an RGB pixel of a uint8 image (transforms.v2.functional's
// adjust_hue on uint8 tensors, torchvision 0.26), each float32 step as torchvision rounds it:
//   x = float(channel) * float(1 / 255)                      (to_dtype, uint8 to float)
//   RGB to HSV as _rgb_to_hsv: v = max, s = (max - min) / max, h from the channel that is the
//     maximum, h = fmod(h * float(1 / 6) + 1, 1)              (0 for a grey pixel)
//   h = h + hue, then Python's remainder by 1                (into [0, 1))
//   HSV to RGB as _hsv_to_rgb: i = floor(h * 6), f = h * 6 - i, p, q, t clamped to [0, 1]
//   channel = uint8(c * float(255 + 1 - 1e-3)), truncating   (to_dtype, float to uint8)
// Each step is one IEEE-754 operation (or an exact one: max, floor, fmod, clamp), as ATen's CPU
// kernels compute it whatever their vector width, so the bytes are torchvision's exactly
// (ops/color_jitter_test.cc finds no byte apart). The file that includes it is compiled without
// contraction (pipeline/CMakeLists.txt): no step may fuse with the next. Pure.

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace stoker::ops {

inline void torchvision_hue(uint8_t* red, uint8_t* green, uint8_t* blue, float hue) {
  const float to_unit = static_cast<float>(1.0 / 255);
  const float r = *red * to_unit;
  const float g = *green * to_unit;
  const float b = *blue * to_unit;
  const float v = std::max({r, g, b});
  const bool grey = v == std::min({r, g, b});
  const float range = v - std::min({r, g, b});
  const float s = range / (grey ? 1.0f : v);
  const float divisor = grey ? 1.0f : range;
  const float rc = (v - r) / divisor;
  const float gc = (v - g) / divisor;
  const float bc = (v - b) / divisor;
  const float h6th = v == r ? bc - gc : v == g ? (rc + 2.0f) - bc : (gc + 4.0f) - rc;
  float h = std::fmod(h6th * static_cast<float>(1.0 / 6) + 1.0f, 1.0f) + hue;
  h = std::fmod(h, 1.0f);
  if (h < 0) h += 1.0f;

  const float h6 = h * 6.0f;
  const float sector = std::floor(h6);
  const float f = h6 - sector;
  const float sf = s * f;
  const float one_minus_s = 1.0f - s;
  const float p = std::clamp(one_minus_s * v, 0.0f, 1.0f);
  const float q = std::clamp((1.0f - sf) * v, 0.0f, 1.0f);
  const float t = std::clamp((sf + one_minus_s) * v, 0.0f, 1.0f);
  const float rgb[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
  const float* out = rgb[static_cast<int>(sector) % 6];
  const float to_byte = static_cast<float>(255 + 1 - 1e-3);
  *red = static_cast<uint8_t>(out[0] * to_byte);
  *green = static_cast<uint8_t>(out[1] * to_byte);
  *blue = static_cast<uint8_t>(out[2] * to_byte);
}

}  // namespace stoker::ops
