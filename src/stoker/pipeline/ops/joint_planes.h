#pragma once
// The pixel kernels of the joint operations' geometry (ops/joint_canvas.h, ops/joint_resize.h),
// on uint8 planes [planes, height, width]: torch's nearest source index, a canvas gathered from
// the planes by row and column indices (nearest resizes, mirrors, crops and pads in one pass),
// an image's planes from its decoded RGB rows, and PIL's antialiased BILINEAR resize of an image
// (image/resample.h), of the whole resized image or of a window of it.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "stoker/image/resample.h"
#include "stoker/util/status.h"

namespace stoker::ops {

// torch's nearest source index of output index i (interpolate's floor(i * float(in / out)),
// in - 1 at most; i / 2 where out = 2 in: ATen's nearest_idx, no scale given).
inline int64_t torch_nearest_index(int64_t i, int64_t in, int64_t out) {
  if (out == in) return i;
  if (out == 2 * in) return i >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * scale)), in - 1);
}

// PIL's NEAREST source indices of a resize from `in` to `out` into `indices` (Image.resize: an
// affine transform's per-column table, ops/pil_geometry.h): x = (in / out) / 2, then + in / out
// for each next output index, in doubles, truncated.
inline void pil_nearest_indices(int64_t in, int64_t out, std::vector<int64_t>& indices) {
  indices.resize(static_cast<size_t>(out));
  const double step = static_cast<double>(in) / static_cast<double>(out);
  double x = step / 2;
  for (int64_t i = 0; i < out; ++i, x += step)
    indices[i] = std::min(static_cast<int64_t>(x), in - 1);
}

// Where a canvas shows the planes: canvas pixel (y, x) with y0 <= y < y1 and x0 <= x < x1 is
// plane pixel (rows[y - y0], columns[x - x0]); every other canvas pixel is the fill.
struct PlaneGather {
  int64_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  std::vector<int64_t> rows, columns;
};

// `planes` planes of width x height at `data` replaced by canvases of canvas_width x
// canvas_height gathered as `gather` says, plane c's fill fill[c] (or fill[0] for all,
// one_fill). A canvas row that reads the plane row of the row above it is a copy of it; columns
// read in order (a crop) or in reverse order (a mirror) are copied as runs.
inline void gather_planes(std::vector<uint8_t>& data, int64_t planes, int64_t width, int64_t height,
                          const PlaneGather& gather, int64_t canvas_width, int64_t canvas_height,
                          const uint8_t* fill, bool one_fill) {
  thread_local std::vector<uint8_t> out;
  const int64_t canvas = canvas_width * canvas_height;
  out.resize(static_cast<size_t>(planes * canvas));
  const int64_t shown = gather.x1 - gather.x0;
  const int64_t* columns = gather.columns.data();
  bool forward = shown > 0, backward = shown > 0;
  for (int64_t x = 1; x < shown; ++x) {
    forward = forward && columns[x] == columns[0] + x;
    backward = backward && columns[x] == columns[0] - x;
  }
  for (int64_t c = 0; c < planes; ++c) {
    const uint8_t* plane = data.data() + c * height * width;
    uint8_t* to = out.data() + c * canvas;
    const uint8_t value = fill[one_fill ? 0 : c];
    for (int64_t y = 0; y < canvas_height; ++y, to += canvas_width) {
      if (y < gather.y0 || y >= gather.y1 || shown == 0) {
        std::fill_n(to, canvas_width, value);
        continue;
      }
      std::fill_n(to, gather.x0, value);
      std::fill(to + gather.x1, to + canvas_width, value);
      const int64_t row = gather.rows[y - gather.y0];
      if (y > gather.y0 && gather.rows[y - 1 - gather.y0] == row) {
        std::memcpy(to + gather.x0, to - canvas_width + gather.x0, static_cast<size_t>(shown));
        continue;
      }
      const uint8_t* from = plane + row * width;
      uint8_t* into = to + gather.x0;
      if (forward) {
        std::memcpy(into, from + columns[0], static_cast<size_t>(shown));
      } else if (backward) {
        const uint8_t* first = from + columns[0];
        for (int64_t x = 0; x < shown; ++x) into[x] = first[-x];
      } else {
        for (int64_t x = 0; x < shown; ++x) into[x] = from[columns[x]];
      }
    }
  }
  data.swap(out);
}

// The RGB rows [height, width, 3] at `rgb` (as decoded) as planes [3, height, width] at
// `planes`.
inline void planes_of_rgb(const uint8_t* rgb, int64_t width, int64_t height, uint8_t* planes) {
  const auto plane = static_cast<size_t>(height * width);
  for (size_t i = 0; i < plane; ++i) {
    for (size_t c = 0; c < 3; ++c) planes[c * plane + i] = rgb[3 * i + c];
  }
}

// `image` of width x height pixels (planes [3, H, W], or interleaved RGB rows [H, W, 3])
// resized to new_width x new_height by PIL's BILINEAR, its window (its columns mirrored with
// `mirror`; window.width 0: the whole image) written as planes at `out` (3 * window.width *
// window.height bytes).
inline Status resample_image(const uint8_t* image, bool interleaved, int64_t width, int64_t height,
                             int64_t new_width, int64_t new_height,
                             const image::ResampleWindow& window, bool mirror, uint8_t* out) {
  thread_local std::vector<uint8_t> rgb;  // the resampler reads interleaved RGB
  thread_local image::Resampler resampler;
  const auto plane = static_cast<size_t>(height * width);
  if (!interleaved) {
    rgb.resize(3 * plane);
    for (size_t i = 0; i < plane; ++i) {
      for (size_t c = 0; c < 3; ++c) rgb[3 * i + c] = image[c * plane + i];
    }
  }
  const image::RgbView view = {interleaved ? image : rgb.data(), static_cast<int>(width),
                               static_cast<int>(height), static_cast<ptrdiff_t>(3 * width)};
  image::ResampleOutput resized;
  resized.width = static_cast<int>(new_width);
  resized.height = static_cast<int>(new_height);
  resized.window = window;
  resized.flip_horizontal = mirror;
  resized.type = image::ResampleOutput::Type::kUint8;
  const image::PixelBox box = {0, 0, static_cast<double>(width), static_cast<double>(height)};
  return resampler.resample(view, box, resized, out);
}

}  // namespace stoker::ops
