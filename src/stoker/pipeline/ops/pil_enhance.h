#pragma once
// PIL's ImageEnhance steps on uint8 channels, each float step rounded once as Pillow's C code
// does (the including file is built with -ffp-contract=off):
//   pil_blend        Image.blend(a, b, alpha) of one value: alpha is float32;
//                    float32 a + alpha * (b - a), clipped to [0, 255] and truncated
//                    (an infinite alpha times 0 is NaN: 0, as PIL gives it)
//   pil_smooth       ImageFilter.SMOOTH of a channel: inside the one-pixel border float32
//                    0.5 + row below + row + row above, each row (left * k1 + centre * kc) +
//                    right * k1, k1 = 1f / 13f, kc = 5f / 13f in the middle row, else k1;
//                    clipped and truncated; the border (and a channel under 3 pixels a side) as
//                    it is
//   pil_grey         convert("L") of an RGB pixel: (19595 r + 38470 g + 7471 b + 0x8000) >> 16
//   pil_mean_grey    ImageEnhance.Contrast's grey: int(mean of the L histogram + 0.5), the mean
//                    a double sum of value * count over the pixel count
//   pil_enhance_image  ImageEnhance's Brightness, Color, Contrast or Sharpness .enhance(factor)
//                    of an image [C, H, W] in place: its degenerate image (black, the grey
//                    image, the mean grey, SMOOTH) blended with it, alpha float32 factor (Color
//                    leaves an "L" image as it is)
// Pure.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stoker::ops {

// PIL's clip then (UINT8) cast of a float32; NaN 0.
inline uint8_t pil_truncated(float value) {
  if (!(value > 0.0f)) return 0;
  if (value >= 255.0f) return 255;
  return static_cast<uint8_t>(value);
}

inline uint8_t pil_blend(uint8_t a, uint8_t b, float alpha) {
  const float step = alpha * static_cast<float>(static_cast<int>(b) - static_cast<int>(a));
  return pil_truncated(static_cast<float>(a) + step);
}

// SMOOTH of a channel [height, width] into `smooth`.
inline void pil_smooth(const uint8_t* channel, size_t height, size_t width, uint8_t* smooth) {
  std::copy(channel, channel + height * width, smooth);
  if (height < 3 || width < 3) return;
  const float side = 1.0f / 13.0f;
  const float centre = 5.0f / 13.0f;
  auto row_sum = [&](const uint8_t* row, size_t x, float middle) {
    const float left = static_cast<float>(row[x - 1]) * side;
    const float mid = static_cast<float>(row[x]) * middle;
    const float right = static_cast<float>(row[x + 1]) * side;
    return (left + mid) + right;
  };
  for (size_t y = 1; y + 1 < height; ++y) {
    const uint8_t* above = channel + (y - 1) * width;
    const uint8_t* row = channel + y * width;
    const uint8_t* below = channel + (y + 1) * width;
    for (size_t x = 1; x + 1 < width; ++x) {
      float sum = 0.5f + row_sum(below, x, side);
      sum += row_sum(row, x, centre);
      sum += row_sum(above, x, side);
      smooth[y * width + x] = pil_truncated(sum);
    }
  }
}

inline uint8_t pil_grey(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
}

// The grey of an image [channels, plane] (channels 1: the channel itself, 3: pil_grey).
inline int pil_mean_grey(const uint8_t* pixels, size_t channels, size_t plane) {
  if (plane == 0) return 0;
  int64_t histogram[256] = {};
  for (size_t i = 0; i < plane; ++i) {
    ++histogram[channels == 1 ? pixels[i]
                              : pil_grey(pixels[i], pixels[plane + i], pixels[2 * plane + i])];
  }
  double sum = 0.0;
  for (int v = 0; v < 256; ++v) sum += static_cast<double>(v * histogram[v]);
  return static_cast<int>(sum / static_cast<double>(plane) + 0.5);
}

enum class PilEnhance { kBrightness, kColor, kContrast, kSharpness };

inline void pil_enhance_image(PilEnhance kind, float factor, uint8_t* pixels, int64_t channels,
                              int64_t height, int64_t width) {
  const size_t plane = static_cast<size_t>(height * width);
  auto blend = [&](auto degenerate_of) {
    for (int64_t c = 0; c < channels; ++c) {
      uint8_t* channel = pixels + c * plane;
      for (size_t i = 0; i < plane; ++i) {
        channel[i] = pil_blend(degenerate_of(c, i), channel[i], factor);
      }
    }
  };
  // A degenerate of one value: the blend is a table of the pixel's value.
  auto blend_with = [&](uint8_t degenerate) {
    uint8_t table[256];
    for (int value = 0; value < 256; ++value)
      table[value] = pil_blend(degenerate, static_cast<uint8_t>(value), factor);
    for (size_t i = 0; i < static_cast<size_t>(channels) * plane; ++i) pixels[i] = table[pixels[i]];
  };
  switch (kind) {
    case PilEnhance::kBrightness:
      blend_with(0);
      return;
    case PilEnhance::kColor: {
      if (channels == 1) return;
      std::vector<uint8_t> grey(plane);
      for (size_t i = 0; i < plane; ++i) {
        grey[i] = pil_grey(pixels[i], pixels[plane + i], pixels[2 * plane + i]);
      }
      blend([&](int64_t, size_t i) { return grey[i]; });
      return;
    }
    case PilEnhance::kContrast: {
      blend_with(static_cast<uint8_t>(pil_mean_grey(pixels, channels, plane)));
      return;
    }
    case PilEnhance::kSharpness: {
      std::vector<uint8_t> smooth(channels * plane);
      for (int64_t c = 0; c < channels; ++c) {
        pil_smooth(pixels + c * plane, height, width, smooth.data() + c * plane);
      }
      blend([&](int64_t c, size_t i) { return smooth[c * plane + i]; });
      return;
    }
  }
}

}  // namespace stoker::ops
