#pragma once
// Pillow's nearest-neighbour geometry of torchvision's F.affine and F.rotate on a PIL image,
// for a uint8 image [C, H, W] (the output the input's size, a fill colour outside):
//   pil_affine_sources  Image.transform(size, AFFINE, a, NEAREST) (libImaging's
//       ImagingTransformAffine): output pixel (x, y) takes the source pixel at
//       (a0 X + a1 Y + a2, a3 X + a4 Y + a5), X = x + 0.5, Y = y + 0.5, floored; outside the
//       source, the fill. Three ways, each its own roundings:
//         a1 == a3 == 0   per-column and per-row tables: x0 = a2 + a0 / 2 then += a0 per column
//                         (y likewise with a5, a4); the columns from the first to the last one
//                         inside, a column between them that falls outside reading column 0;
//         else, when the matrix at the four corners (0 or W, 0 or H) is under 32768 in size:
//                         16.16 fixed point, each of a0, a1, a3, a4 and the starts
//                         (a2 + a0 / 2) + a1 / 2, (a5 + a3 / 2) + a4 / 2 as
//                         floor(v * 65536 + 0.5), stepped in integers, >> 16;
//         else            doubles stepped from (a2 + a1 / 2) + a0 / 2 (rows by a1, columns
//                         by a0), truncated (below 0: outside).
//   torchvision_inverse_affine  _get_inverse_affine_matrix, its double steps in its order.
//   pil_rotate_sources  Image.rotate(angle, NEAREST, expand=False): angle % 360 (Python's);
//       0 the image; 180 turned; 90 and 270 on a square image transposed; else the matrix
//       [c, s, 0, -s, c, 0], c = round(cos(-radians(angle)), 15) and s = round(sin(...), 15)
//       (Python's decimal rounding), centred at (W / 2, H / 2), through pil_affine_sources
//       (pil_rotate_transpose, pil_rotate_matrix).
//   pil_affine_bilinear, pil_affine_bicubic  the same with BILINEAR or BICUBIC (below).
//   pil_transform_image, pil_rotate_image  Image.transform(AFFINE) and Image.rotate of a whole
//       image [C, H, W] in place in any of the three filters, `fillcolor` one value per channel.
// Sources are flat indices y * W + x of the source plane, -1 for the fill. libm's sin, cos,
// tan and atan as Python's (the same glibc). Pure; the including file is built with
// -ffp-contract=off.

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace stoker::ops {

using AffineMatrix = std::array<double, 6>;

namespace pil_geometry_detail {

// libImaging's COORD: -1 below 0, else truncated (huge values outside too).
inline int64_t coord(double v) {
  if (v < 0.0) return -1;
  if (v >= 2147483647.0) return 2147483647;
  return static_cast<int64_t>(v);
}

// libImaging's FIX: floor(v * 65536 + 0.5) as an int.
inline int64_t fix(double v) {
  const double scaled = v * 65536.0 + 0.5;
  return scaled < 0.0 ? static_cast<int64_t>(std::floor(scaled)) : static_cast<int64_t>(scaled);
}

inline bool fits_fixed(const AffineMatrix& a, int64_t x, int64_t y) {
  const double u = static_cast<double>(x) * a[0] + static_cast<double>(y) * a[1] + a[2];
  const double v = static_cast<double>(x) * a[3] + static_cast<double>(y) * a[4] + a[5];
  return std::fabs(u) < 32768.0 && std::fabs(v) < 32768.0;
}

inline constexpr double kPi = 3.141592653589793238462643383279502884;

// Python's math.radians and math.degrees.
inline double radians(double degrees) { return degrees * (kPi / 180.0); }
inline double degrees(double radians) { return radians * (180.0 / kPi); }

// Python's round(x, 15): the decimal of 15 places nearest x, read back.
inline double round15(double x) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.15f", x);
  return std::strtod(text, nullptr);
}

// Python's x % 360.0 (the sign of 360).
inline double python_mod360(double x) {
  double mod = std::fmod(x, 360.0);
  if (mod != 0.0) {
    if (mod < 0.0) mod += 360.0;
  } else {
    mod = 0.0;
  }
  return mod;
}

}  // namespace pil_geometry_detail

// The source of each output pixel of Image.transform(AFFINE, a, NEAREST), [height * width].
inline std::vector<int64_t> pil_affine_sources(const AffineMatrix& a, int64_t height,
                                               int64_t width) {
  using pil_geometry_detail::coord;
  using pil_geometry_detail::fix;
  std::vector<int64_t> sources(static_cast<size_t>(height * width), -1);
  auto set = [&](int64_t x, int64_t y, int64_t xin, int64_t yin) {
    if (xin >= 0 && xin < width && yin >= 0 && yin < height)
      sources[y * width + x] = yin * width + xin;
  };
  if (a[1] == 0.0 && a[3] == 0.0) {
    std::vector<int64_t> column(static_cast<size_t>(width), 0);
    int64_t first = width;
    int64_t end = 0;
    double xo = a[2] + a[0] * 0.5;
    for (int64_t x = 0; x < width; ++x) {
      const int64_t xin = coord(xo);
      if (xin >= 0 && xin < width) {
        end = x + 1;
        if (x < first) first = x;
        column[x] = xin;
      }
      xo += a[0];
    }
    double yo = a[5] + a[4] * 0.5;
    for (int64_t y = 0; y < height; ++y) {
      const int64_t yin = coord(yo);
      if (yin >= 0 && yin < height) {
        for (int64_t x = first; x < end; ++x) sources[y * width + x] = yin * width + column[x];
      }
      yo += a[4];
    }
    return sources;
  }
  if (pil_geometry_detail::fits_fixed(a, 0, 0) &&
      pil_geometry_detail::fits_fixed(a, width, height) &&
      pil_geometry_detail::fits_fixed(a, 0, height) &&
      pil_geometry_detail::fits_fixed(a, width, 0)) {
    const int64_t a0 = fix(a[0]);
    const int64_t a1 = fix(a[1]);
    const int64_t a3 = fix(a[3]);
    const int64_t a4 = fix(a[4]);
    int64_t row_x = fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
    int64_t row_y = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
    for (int64_t y = 0; y < height; ++y) {
      int64_t xx = row_x;
      int64_t yy = row_y;
      for (int64_t x = 0; x < width; ++x) {
        set(x, y, xx >> 16, yy >> 16);  // an arithmetic shift: the floor
        xx += a0;
        yy += a3;
      }
      row_x += a1;
      row_y += a4;
    }
    return sources;
  }
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int64_t y = 0; y < height; ++y) {
    double xx = xo;
    double yy = yo;
    for (int64_t x = 0; x < width; ++x) {
      set(x, y, coord(xx), coord(yy));
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
  return sources;
}

// torchvision's _get_inverse_affine_matrix(center, angle, translate, scale, shear) (degrees).
inline AffineMatrix torchvision_inverse_affine(double cx, double cy, double angle, double tx,
                                               double ty, double scale, double shear_x,
                                               double shear_y) {
  using pil_geometry_detail::radians;
  const double rot = radians(angle);
  const double sx = radians(shear_x);
  const double sy = radians(shear_y);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  AffineMatrix m = {d / scale, -b / scale, 0.0 / scale, -c / scale, a / scale, 0.0 / scale};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// Image.rotate's transposes: the source of each output pixel where `angle` (after % 360) is 0,
// 180, or 90 or 270 on a square image; else empty.
inline std::vector<int64_t> pil_rotate_transpose(double angle, int64_t height, int64_t width) {
  angle = pil_geometry_detail::python_mod360(angle);
  std::vector<int64_t> sources(static_cast<size_t>(height * width));
  auto each = [&](auto source_of) {
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) sources[y * width + x] = source_of(x, y);
    return sources;
  };
  if (angle == 0.0) return each([&](int64_t x, int64_t y) { return y * width + x; });
  if (angle == 180.0) {
    return each([&](int64_t x, int64_t y) { return (height - 1 - y) * width + (width - 1 - x); });
  }
  if (width == height && angle == 90.0) {
    return each([&](int64_t x, int64_t y) { return x * width + (width - 1 - y); });
  }
  if (width == height && angle == 270.0) {
    return each([&](int64_t x, int64_t y) { return (height - 1 - x) * width + y; });
  }
  return {};
}

// Image.rotate's matrix (where pil_rotate_transpose is empty).
inline AffineMatrix pil_rotate_matrix(double angle, int64_t height, int64_t width) {
  using namespace pil_geometry_detail;
  const double turn = -radians(python_mod360(angle));
  AffineMatrix m = {round15(std::cos(turn)),  round15(std::sin(turn)), 0.0,
                    round15(-std::sin(turn)), round15(std::cos(turn)), 0.0};
  const double cx = static_cast<double>(width) / 2.0;
  const double cy = static_cast<double>(height) / 2.0;
  m[2] = m[0] * -cx + m[1] * -cy + m[2];
  m[5] = m[3] * -cx + m[4] * -cy + m[5];
  m[2] += cx;
  m[5] += cy;
  return m;
}

// The source of each output pixel of Image.rotate(angle, NEAREST) ([height * width]).
inline std::vector<int64_t> pil_rotate_sources(double angle, int64_t height, int64_t width) {
  std::vector<int64_t> sources = pil_rotate_transpose(angle, height, width);
  if (!sources.empty()) return sources;
  return pil_affine_sources(pil_rotate_matrix(angle, height, width), height, width);
}

// PIL's resampling filters of Image.transform and Image.rotate.
enum class PilFilter { kNearest, kBilinear, kBicubic };

// "bilinear" and "bicubic" by name; anything else NEAREST.
inline PilFilter pil_filter(const std::string& name) {
  return name == "bilinear"  ? PilFilter::kBilinear
         : name == "bicubic" ? PilFilter::kBicubic
                             : PilFilter::kNearest;
}

namespace pil_geometry_detail {

// floor(v) of a sampled coordinate (|v| far below 2^63), without a call into libm.
inline int64_t floor_of(double v) {
  const int64_t truncated = static_cast<int64_t>(v);
  return static_cast<double>(truncated) > v ? truncated - 1 : truncated;
}

// libImaging's generic transform of an image [channels, height, width] (`plane` = height *
// width) into `out`: output pixel (x, y) samples u = (a0 X + a1 Y) + a2, v = (a3 X + a4 Y) + a5
// (X = x + 0.5, Y = y + 0.5), `fill[c]` in each channel c where u or v is outside [0, size);
// else `sample(u - 0.5, v - 0.5, y * width + x)`, which sets that pixel in every channel. The
// coordinates are computed once a pixel; each channel's arithmetic is libImaging's own.
template <typename Sample>
void generic_affine(const AffineMatrix& a, int64_t channels, int64_t height, int64_t width,
                    const uint8_t* fill, uint8_t* out, Sample sample) {
  const size_t plane = static_cast<size_t>(height * width);
  for (int64_t y = 0; y < height; ++y) {
    const double py = static_cast<double>(y) + 0.5;
    for (int64_t x = 0; x < width; ++x) {
      const double px = static_cast<double>(x) + 0.5;
      const double u = a[0] * px + a[1] * py + a[2];
      const double v = a[3] * px + a[4] * py + a[5];
      const size_t at = static_cast<size_t>(y * width + x);
      if (u < 0.0 || u >= static_cast<double>(width) || v < 0.0 ||
          v >= static_cast<double>(height)) {
        for (int64_t c = 0; c < channels; ++c) out[c * plane + at] = fill[c];
      } else {
        sample(u - 0.5, v - 0.5, at);
      }
    }
  }
}

}  // namespace pil_geometry_detail

// Image.transform(size, AFFINE, a, BILINEAR) of an image [channels, height, width] into `out`
// (libImaging's bilinear filter): with i = floor(u'), du = u' - i (v likewise), columns i and
// i + 1 clamped to the image, row j clamped, row j + 1 where inside (else row j's value): in
// doubles, p + (q - p) * du along each row, then r + (s - r) * dv, truncated.
inline void pil_affine_bilinear(const AffineMatrix& a, const uint8_t* in, int64_t channels,
                                int64_t height, int64_t width, const uint8_t* fill, uint8_t* out) {
  const size_t plane = static_cast<size_t>(height * width);
  auto clamp_x = [&](int64_t x) { return x < 0 ? 0 : x < width ? x : width - 1; };
  auto clamp_y = [&](int64_t y) { return y < 0 ? 0 : y < height ? y : height - 1; };
  auto sample = [&](double u, double v, size_t at) {
    const int64_t i = pil_geometry_detail::floor_of(u);
    const int64_t j = pil_geometry_detail::floor_of(v);
    const double du = u - static_cast<double>(i);
    const double dv = v - static_cast<double>(j);
    const int64_t x0 = clamp_x(i);
    const int64_t x1 = clamp_x(i + 1);
    const int64_t top_row = clamp_y(j) * width;
    const bool below_inside = j + 1 >= 0 && j + 1 < height;
    const int64_t bottom_row = (j + 1) * width;
    for (int64_t c = 0; c < channels; ++c) {
      const uint8_t* channel = in + c * plane;
      auto along = [&](const uint8_t* row) {
        return static_cast<double>(row[x0]) + static_cast<double>(row[x1] - row[x0]) * du;
      };
      const double top = along(channel + top_row);
      const double bottom = below_inside && dv != 0.0 ? along(channel + bottom_row) : top;
      out[c * plane + at] = static_cast<uint8_t>(top + (bottom - top) * dv);
    }
  };
  pil_geometry_detail::generic_affine(a, channels, height, width, fill, out, sample);
}

// Image.transform(size, AFFINE, a, BICUBIC) of an image [channels, height, width] into `out`
// (libImaging's bicubic filter): with i = floor(u') - 1, du = u' - floor(u') (v likewise),
// columns i .. i + 3 clamped to the image, row j clamped, rows j + 1 .. j + 3 where inside (else
// the row before's value); each row and then the column of rows through PIL's cubic in doubles
// (v1 v2 v3 v4, d):
//   v2 + d ((v3 - v1) + d ((2 (v1 - v2) + v3 - v4) + d (v2 - v1 - v3 + v4))),
// 0 at or below 0, 255 at or above 255, else truncated.
inline void pil_affine_bicubic(const AffineMatrix& a, const uint8_t* in, int64_t channels,
                               int64_t height, int64_t width, const uint8_t* fill, uint8_t* out) {
  const size_t plane = static_cast<size_t>(height * width);
  auto clamp_x = [&](int64_t x) { return x < 0 ? 0 : x < width ? x : width - 1; };
  // A row's four bytes go in as ints: p2, p3 and p4 are then small integers, computed exactly
  // as in doubles and faster; the column's four values go in as doubles.
  auto cubic = [](auto v1, auto v2, auto v3, auto v4, double d) -> double {
    const auto p2 = -v1 + v3;
    const auto p3 = 2 * (v1 - v2) + v3 - v4;
    const auto p4 = -v1 + v2 - v3 + v4;
    return v2 + d * (p2 + d * (p3 + d * p4));
  };
  auto sample = [&](double u, double v, size_t at) {
    const int64_t fx = pil_geometry_detail::floor_of(u);
    const int64_t fy = pil_geometry_detail::floor_of(v);
    const double du = u - static_cast<double>(fx);
    const double dv = v - static_cast<double>(fy);
    const int64_t i = fx - 1;
    const int64_t j = fy - 1;
    const int64_t x0 = clamp_x(i), x1 = clamp_x(i + 1), x2 = clamp_x(i + 2), x3 = clamp_x(i + 3);
    // Each of the four rows' offset; a row outside repeats the one before.
    int64_t rows[4];
    rows[0] = (j < 0 ? 0 : j < height ? j : height - 1) * width;
    for (int k = 1; k < 4; ++k)
      rows[k] = j + k >= 0 && j + k < height ? (j + k) * width : rows[k - 1];
    // cubic(v1, v2, v3, v4, 0) is v2 exactly: a step of 0 (every pixel of a shear or a
    // translation along one axis) skips the other three values.
    for (int64_t c = 0; c < channels; ++c) {
      const uint8_t* channel = in + c * plane;
      auto along = [&](int64_t row) -> double {
        const uint8_t* r = channel + row;
        if (du == 0.0) return r[x1];
        return cubic(int{r[x0]}, int{r[x1]}, int{r[x2]}, int{r[x3]}, du);
      };
      const double value =
          dv == 0.0 ? along(rows[1])
                    : cubic(along(rows[0]), along(rows[1]), along(rows[2]), along(rows[3]), dv);
      out[c * plane + at] = value <= 0.0     ? uint8_t{0}
                            : value >= 255.0 ? uint8_t{255}
                                             : static_cast<uint8_t>(value);
    }
  };
  pil_geometry_detail::generic_affine(a, channels, height, width, fill, out, sample);
}

// Image.transform(size, AFFINE, a, filter, fillcolor=fill) of the image [channels, height,
// width] in place; `fill` one value per channel.
inline void pil_transform_image(const AffineMatrix& a, PilFilter filter,
                                const std::vector<uint8_t>& fill, uint8_t* pixels, int64_t channels,
                                int64_t height, int64_t width) {
  const size_t plane = static_cast<size_t>(height * width);
  const std::vector<uint8_t> input(pixels, pixels + channels * plane);
  if (filter == PilFilter::kNearest) {
    const std::vector<int64_t> sources = pil_affine_sources(a, height, width);
    for (int64_t c = 0; c < channels; ++c) {
      const uint8_t* from = input.data() + c * plane;
      uint8_t* to = pixels + c * plane;
      for (size_t i = 0; i < plane; ++i) to[i] = sources[i] < 0 ? fill[c] : from[sources[i]];
    }
    return;
  }
  (filter == PilFilter::kBilinear ? pil_affine_bilinear : pil_affine_bicubic)(
      a, input.data(), channels, height, width, fill.data(), pixels);
}

// Image.rotate(angle, filter, fillcolor=fill) (expand=False) of the image in place.
inline void pil_rotate_image(double angle, PilFilter filter, const std::vector<uint8_t>& fill,
                             uint8_t* pixels, int64_t channels, int64_t height, int64_t width) {
  const std::vector<int64_t> turned = pil_rotate_transpose(angle, height, width);
  if (turned.empty()) {
    return pil_transform_image(pil_rotate_matrix(angle, height, width), filter, fill, pixels,
                               channels, height, width);
  }
  const size_t plane = static_cast<size_t>(height * width);
  const std::vector<uint8_t> input(pixels, pixels + channels * plane);
  for (int64_t c = 0; c < channels; ++c) {
    for (size_t i = 0; i < plane; ++i) pixels[c * plane + i] = input[c * plane + turned[i]];
  }
}

}  // namespace stoker::ops
