#pragma once
// Pillow's RGB <-> HSV conversions of one uint8 pixel (Image.convert("HSV") and an "HSV" image's
// convert("RGB"), libImaging's Convert.c), what torchvision's adjust_hue on a PIL image goes
// through; every value is uint8, each float step rounded once as Pillow's C code does (the
// including file is built with -ffp-contract=off):
//   pil_rgb_to_hsv  v = max(r, g, b); a grey pixel (max == min) is h = s = 0; else, c = float
//                   (max - min), s = c / float(max), rc, gc, bc = float(max - x) / c, h = bc - gc
//                   (r the max), 2.0 + rc - bc (g), 4.0 + gc - rc (b), in float32, then
//                   fmod(h / 6.0 + 1.0, 1.0) in double; h and s as int(x * 255.0), clipped
//   pil_hsv_to_rgb  s 0: v, v, v; else i = floor(float(h) * 6.0 / 255.0) and f = float(h) * 6.0 /
//                   255.0 - i in double (f stored as float32), fs = float(s) / 255.0 (float32),
//                   p, q, t = round(v * (1.0 - fs), v * (1.0 - fs * f), v * (1.0 - fs * (1.0 -
//                   f))) in double from float32 products, clipped; sector i % 6 picks (v, t, p),
//                   (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)
//   pil_adjust_hue  torchvision's adjust_hue of a PIL RGB image: convert("HSV"), h plus
//                   uint8(int32(factor * 255)) wrapping modulo 256, back to RGB
// ops/color_jitter_test.cc compares every RGB colour with Pillow's. Pure.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace stoker::ops {

// Pillow's CLIP8 then (UINT8) cast of an integer.
inline uint8_t pil_clip8(int value) { return static_cast<uint8_t>(std::clamp(value, 0, 255)); }

inline void pil_rgb_to_hsv(uint8_t r, uint8_t g, uint8_t b, uint8_t* h, uint8_t* s, uint8_t* v) {
  const uint8_t max = std::max({r, g, b});
  const uint8_t min = std::min({r, g, b});
  *v = max;
  if (max == min) {
    *h = *s = 0;
    return;
  }
  const float chroma = static_cast<float>(max - min);
  const float saturation = chroma / static_cast<float>(max);
  const float rc = static_cast<float>(max - r) / chroma;
  const float gc = static_cast<float>(max - g) / chroma;
  const float bc = static_cast<float>(max - b) / chroma;
  float hue;
  if (r == max) {
    hue = bc - gc;
  } else if (g == max) {
    hue = static_cast<float>(2.0 + rc - bc);
  } else {
    hue = static_cast<float>(4.0 + gc - rc);
  }
  hue = static_cast<float>(std::fmod(hue / 6.0 + 1.0, 1.0));
  *h = pil_clip8(static_cast<int>(hue * 255.0));
  *s = pil_clip8(static_cast<int>(saturation * 255.0));
}

inline void pil_hsv_to_rgb(uint8_t h, uint8_t s, uint8_t v, uint8_t* r, uint8_t* g, uint8_t* b) {
  if (s == 0) {
    *r = *g = *b = v;
    return;
  }
  const int sector = static_cast<int>(std::floor(static_cast<float>(h) * 6.0 / 255.0));
  const float f = static_cast<float>(static_cast<float>(h) * 6.0 / 255.0 - sector);
  const float fs = static_cast<float>(static_cast<float>(s) / 255.0);
  const float value = static_cast<float>(v);
  const uint8_t p = pil_clip8(static_cast<int>(std::round(value * (1.0 - fs))));
  const uint8_t q = pil_clip8(static_cast<int>(std::round(value * (1.0 - fs * f))));
  const uint8_t t = pil_clip8(static_cast<int>(std::round(value * (1.0 - fs * (1.0 - f)))));
  const uint8_t rgb[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
  *r = rgb[sector % 6][0];
  *g = rgb[sector % 6][1];
  *b = rgb[sector % 6][2];
}

// pil_adjust_hue of the planes R, G, B of `plane` pixels each at `pixels`, in place.
inline void pil_adjust_hue(uint8_t* pixels, size_t plane, double factor) {
  const auto shift = static_cast<uint8_t>(static_cast<int32_t>(factor * 255));
  uint8_t* g = pixels + plane;
  uint8_t* b = pixels + 2 * plane;
  for (size_t i = 0; i < plane; ++i) {
    uint8_t h, s, v;
    pil_rgb_to_hsv(pixels[i], g[i], b[i], &h, &s, &v);
    pil_hsv_to_rgb(static_cast<uint8_t>(h + shift), s, v, &pixels[i], &g[i], &b[i]);
  }
}

}  // namespace stoker::ops
