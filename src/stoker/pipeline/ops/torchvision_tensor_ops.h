#pragma once
// torchvision's tensor kernels (torchvision/transforms/_functional_tensor.py) on a uint8 image
// [C, H, W] in place, C 1 or 3, each float32 step rounded once as torch's CPU kernels round
// it (the including file is built with -ffp-contract=off), for ops/augmix.cc (AugMix runs
// them on the PIL image made a tensor):
//   torch_grid_transform   affine and rotate (expand=False): theta the float32 matrix; the
//       grid of _gen_affine_grid, per output pixel (X * a + Y * b) + c with X, Y the centred
//       pixel centres and a, b, c theta's column over 0.5 W (0.5 H); grid_sample
//       (align_corners=False, zeros padding) at fma(g + 1, size / 2, -0.5): bilinear
//       fma(se v, fma(sw v, fma(ne v, nw v))), the weights products of the distances to the
//       sides, a corner outside 0 (the fused multiply-adds GCC makes of torch's AVX2 and AVX-512
//       kernels: a torch without FMA differs by rounding); nearest the pixel at the
//       coordinates rounded half to even. With a fill, a
//       mask channel of ones sampled alike: bilinear v * mask + (1 - mask) * fill, nearest the
//       fill where the mask is under 0.5. Then rounded half to even to uint8.
//   torch_blend            _blend: ratio * a + (1 - ratio) * b (ratio float32, each product
//       and the sum rounded), clamped to [0, 255], truncated.
//   torch_adjust           adjust_brightness (b = 0), adjust_saturation (b = rgb_to_grayscale:
//       (0.2989 r + 0.587 g) + 0.114 b truncated; a 1-channel image as it is), adjust_contrast
//       (b = the mean of that grey as float32: its sum, exact below 2^24, over the pixel count)
//       and adjust_sharpness (b = the 3x3 kernel [1 1 1; 1 5 1; 1 1 1] / 13 inside the border,
//       rounded half to even: k / 13 is never a tie; the border as it is; under 3 pixels a side
//       the image as it is).
//   torch_autocontrast     per channel (x - min) * ((1 / (max - min)) * 255) (torch's scalar
//       over tensor is a reciprocal times) clamped and truncated; min == max: the image as it
//       is.
// TorchKernels::kV2 gives transforms v2's kernels (v2/functional/_color.py, _geometry.py) where
// they round otherwise: the bilinear fill (v - fill) * mask + fill; _blend fma(b, 1 - ratio,
// ratio * a) (add_'s alpha, a fused multiply-add in torch's vector kernels); the grey
// fma(b, 0.114, fma(g, 0.587, 0.2989 r)) floored; sharpness fma(blur - x, 1 - factor, x) inside
// the border; autocontrast (x - min) / ((max - min) * (1 / 255)).
// Pure.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "stoker/pipeline/ops/pil_geometry.h"

namespace stoker::ops {

// Which of torchvision's tensor kernels: transforms v1's (_functional_tensor.py) or v2's.
enum class TorchKernels { kV1, kV2 };

// torch's float32 to uint8 of a value in [0, 255] after clamp: truncation.
inline uint8_t torch_truncated(float value) {
  if (!(value > 0.0f)) return 0;
  if (value >= 255.0f) return 255;
  return static_cast<uint8_t>(value);
}

inline void torch_grid_transform(TorchKernels kernels, const AffineMatrix& matrix, bool bilinear,
                                 const std::vector<float>& fill, uint8_t* pixels, int64_t channels,
                                 int64_t height, int64_t width) {
  const bool masked = !fill.empty();
  const float half_w = static_cast<float>(0.5 * static_cast<double>(width));
  const float half_h = static_cast<float>(0.5 * static_cast<double>(height));
  const float ax = static_cast<float>(matrix[0]) / half_w;
  const float bx = static_cast<float>(matrix[1]) / half_w;
  const float cx = static_cast<float>(matrix[2]) / half_w;
  const float ay = static_cast<float>(matrix[3]) / half_h;
  const float by = static_cast<float>(matrix[4]) / half_h;
  const float cy = static_cast<float>(matrix[5]) / half_h;
  const float scale_w = static_cast<float>(width) / 2.0f;
  const float scale_h = static_cast<float>(height) / 2.0f;
  const size_t plane = static_cast<size_t>(height * width);
  const std::vector<uint8_t> source(pixels, pixels + plane * static_cast<size_t>(channels));
  std::vector<float> values(static_cast<size_t>(channels + 1));
  for (int64_t i = 0; i < height; ++i) {
    const float y_centre =
        static_cast<float>(-static_cast<double>(height) * 0.5 + 0.5 + static_cast<double>(i));
    for (int64_t j = 0; j < width; ++j) {
      const float x_centre =
          static_cast<float>(-static_cast<double>(width) * 0.5 + 0.5 + static_cast<double>(j));
      const float gx = (x_centre * ax + y_centre * bx) + cx;
      const float gy = (x_centre * ay + y_centre * by) + cy;
      const float x = std::fma(gx + 1.0f, scale_w, -0.5f);
      const float y = std::fma(gy + 1.0f, scale_h, -0.5f);
      const auto at = [&](int64_t c, int64_t yy, int64_t xx) -> float {
        if (xx < 0 || xx >= width || yy < 0 || yy >= height) return 0.0f;
        if (c == channels) return 1.0f;  // the mask
        return static_cast<float>(
            source[static_cast<size_t>(c) * plane + static_cast<size_t>(yy * width + xx)]);
      };
      const int64_t count = channels + (masked ? 1 : 0);
      if (bilinear) {
        const float x_w = std::floor(x);
        const float y_n = std::floor(y);
        const float w = x - x_w;
        const float e = 1.0f - w;
        const float n = y - y_n;
        const float s = 1.0f - n;
        const float nw = s * e, ne = s * w, sw = n * e, se = n * w;
        const int64_t xi = static_cast<int64_t>(x_w), yi = static_cast<int64_t>(y_n);
        for (int64_t c = 0; c < count; ++c) {
          const float first = at(c, yi, xi) * nw;
          const float two = std::fma(at(c, yi, xi + 1), ne, first);
          const float three = std::fma(at(c, yi + 1, xi), sw, two);
          values[static_cast<size_t>(c)] = std::fma(at(c, yi + 1, xi + 1), se, three);
        }
      } else {
        const int64_t xi = static_cast<int64_t>(std::nearbyint(x));
        const int64_t yi = static_cast<int64_t>(std::nearbyint(y));
        for (int64_t c = 0; c < count; ++c) values[static_cast<size_t>(c)] = at(c, yi, xi);
      }
      for (int64_t c = 0; c < channels; ++c) {
        float v = values[static_cast<size_t>(c)];
        if (masked) {
          const float mask = values[static_cast<size_t>(channels)];
          const float colour = fill[fill.size() == 1 ? 0 : static_cast<size_t>(c)];
          if (bilinear && kernels == TorchKernels::kV2) {
            const float moved = v - colour;
            const float masked_moved = moved * mask;
            v = masked_moved + colour;
          } else if (bilinear) {
            const float kept = v * mask;
            const float filled = (1.0f - mask) * colour;
            v = kept + filled;
          } else if (mask < 0.5f) {
            v = colour;
          }
        }
        const float rounded = std::nearbyint(v);
        pixels[static_cast<size_t>(c) * plane + static_cast<size_t>(i * width + j)] =
            static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, rounded)));
      }
    }
  }
}

// _blend of the image with `other` (one value per pixel of a plane, or of every plane where
// `other_planes` is 1).
inline void torch_blend(TorchKernels kernels, double ratio, const std::vector<float>& other,
                        int64_t other_planes, uint8_t* pixels, int64_t channels, size_t plane) {
  const float r = static_cast<float>(ratio);
  const float q = static_cast<float>(1.0 - ratio);
  for (int64_t c = 0; c < channels; ++c) {
    const float* b = other.data() + (other_planes == 1 ? 0 : static_cast<size_t>(c) * plane);
    uint8_t* a = pixels + static_cast<size_t>(c) * plane;
    for (size_t i = 0; i < plane; ++i) {
      const float first = r * static_cast<float>(a[i]);
      if (kernels == TorchKernels::kV2) {
        a[i] = torch_truncated(std::fma(b[i], q, first));
        continue;
      }
      const float second = q * b[i];
      a[i] = torch_truncated(first + second);
    }
  }
}

// rgb_to_grayscale of an RGB image, as floats of its uint8 values.
inline std::vector<float> torch_grey(TorchKernels kernels, const uint8_t* pixels, size_t plane) {
  std::vector<float> grey(plane);
  const float kr = 0.2989f, kg = 0.587f, kb = 0.114f;
  for (size_t i = 0; i < plane; ++i) {
    const float r = kr * static_cast<float>(pixels[i]);
    if (kernels == TorchKernels::kV2) {
      const float rg = std::fma(static_cast<float>(pixels[plane + i]), kg, r);
      grey[i] = std::floor(std::fma(static_cast<float>(pixels[2 * plane + i]), kb, rg));
      continue;
    }
    const float g = kg * static_cast<float>(pixels[plane + i]);
    const float b = kb * static_cast<float>(pixels[2 * plane + i]);
    grey[i] = static_cast<float>(torch_truncated((r + g) + b));
  }
  return grey;
}

enum class TorchAdjust { kBrightness, kSaturation, kContrast, kSharpness };

inline void torch_adjust(TorchKernels kernels, TorchAdjust kind, double factor, uint8_t* pixels,
                         int64_t channels, int64_t height, int64_t width) {
  const size_t plane = static_cast<size_t>(height * width);
  switch (kind) {
    case TorchAdjust::kBrightness:
      return torch_blend(kernels, factor, std::vector<float>(plane, 0.0f), 1, pixels, channels,
                         plane);
    case TorchAdjust::kSaturation:
      if (channels == 1) return;
      return torch_blend(kernels, factor, torch_grey(kernels, pixels, plane), 1, pixels, channels,
                         plane);
    case TorchAdjust::kContrast: {
      const std::vector<float> grey = channels == 3 ? torch_grey(kernels, pixels, plane)
                                                    : std::vector<float>(pixels, pixels + plane);
      float sum = 0.0f;
      for (float v : grey) sum += v;
      const float mean = sum / static_cast<float>(plane);
      return torch_blend(kernels, factor, std::vector<float>(plane, mean), 1, pixels, channels,
                         plane);
    }
    case TorchAdjust::kSharpness: {
      if (height <= 2 || width <= 2) return;
      std::vector<float> blurred(pixels, pixels + plane * static_cast<size_t>(channels));
      for (int64_t c = 0; c < channels; ++c) {
        const uint8_t* in = pixels + static_cast<size_t>(c) * plane;
        float* out = blurred.data() + static_cast<size_t>(c) * plane;
        for (int64_t y = 1; y + 1 < height; ++y) {
          for (int64_t x = 1; x + 1 < width; ++x) {
            int sum = 4 * in[y * width + x];
            for (int64_t dy = -1; dy <= 1; ++dy)
              for (int64_t dx = -1; dx <= 1; ++dx) sum += in[(y + dy) * width + x + dx];
            out[y * width + x] = std::nearbyint(static_cast<float>(sum) / 13.0f);
          }
        }
      }
      if (kernels == TorchKernels::kV1)
        return torch_blend(kernels, factor, blurred, channels, pixels, channels, plane);
      const float alpha = static_cast<float>(1.0 - factor);
      for (int64_t c = 0; c < channels; ++c) {
        uint8_t* a = pixels + static_cast<size_t>(c) * plane;
        const float* b = blurred.data() + static_cast<size_t>(c) * plane;
        for (int64_t y = 1; y + 1 < height; ++y) {
          for (int64_t x = 1; x + 1 < width; ++x) {
            const float value = static_cast<float>(a[y * width + x]);
            a[y * width + x] = torch_truncated(std::fma(b[y * width + x] - value, alpha, value));
          }
        }
      }
      return;
    }
  }
}

// torch_autocontrast of one channel of `count` values as a table of its 256 values (a value's
// result depends on the channel's lowest and highest only).
inline std::array<uint8_t, 256> torch_autocontrast_table(TorchKernels kernels,
                                                         const uint8_t* channel, size_t count) {
  std::array<uint8_t, 256> table;
  for (int v = 0; v < 256; ++v) table[v] = static_cast<uint8_t>(v);
  if (count == 0) return table;
  const auto [low, high] = std::minmax_element(channel, channel + count);
  if (*low == *high) return table;
  const float minimum = static_cast<float>(*low);
  const float range = static_cast<float>(*high) - minimum;
  const float scale = (1.0f / range) * 255.0f;
  const float inverse_scale = range * static_cast<float>(1.0 / 255.0);
  for (int v = *low; v <= *high; ++v) {
    const float moved = static_cast<float>(v) - minimum;
    table[v] =
        torch_truncated(kernels == TorchKernels::kV2 ? moved / inverse_scale : moved * scale);
  }
  return table;
}

inline void torch_autocontrast(TorchKernels kernels, uint8_t* pixels, int64_t channels,
                               size_t plane) {
  for (int64_t c = 0; c < channels; ++c) {
    uint8_t* a = pixels + static_cast<size_t>(c) * plane;
    const std::array<uint8_t, 256> table = torch_autocontrast_table(kernels, a, plane);
    for (size_t i = 0; i < plane; ++i) a[i] = table[a[i]];
  }
}

}  // namespace stoker::ops
