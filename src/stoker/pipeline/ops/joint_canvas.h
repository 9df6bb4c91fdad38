#pragma once
// A joint sample moved onto a canvas of another size, as torchvision's F.pad (constant fill) and
// F.crop move (image, target): canvas pixel (y, x) is the sample's (y + top, x + left) where
// that lies inside it, else the fill: a negative offset pads, a positive one crops. The image's
// planes fill with their own values, the object masks and the class map with theirs; each XYXY
// box moves by (-left, -top) in float32, as v2's pad and crop of boxes (clamping is the
// caller's): the joint operations that pad or cut with a fill. A resize or mirror waiting on the
// sample's pixels (JointSample::resized_from_width, mirrored) is applied to the part the canvas
// keeps only, each pixel the whole resize's: a resize then a crop resizes the crop alone.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/joint_sample.h"
#include "stoker/pipeline/ops/joint_planes.h"
#include "stoker/util/status.h"

namespace stoker::ops {

struct CanvasFill {
  std::array<uint8_t, 3> image = {0, 0, 0};  // one per channel
  uint8_t masks = 0;
  uint8_t class_map = 0;
};

// The image's fill of a "fill" parameter of one value or 3 (each in [0, 255]), as PIL's pad takes
// it: int(v) of each (torchvision's _parse_fill). kInvalidArgument naming `op` for 2 values.
inline Result<std::array<uint8_t, 3>> image_fill(const char* op,
                                                 const std::vector<double>& values) {
  if (values.size() != 1 && values.size() != 3)
    return invalid_argument(
        fmt::format("{}: fill takes one value or 3 (one per channel), not {}", op, values.size()));
  std::array<uint8_t, 3> fill;
  for (size_t c = 0; c < 3; ++c) fill[c] = static_cast<uint8_t>(values[values.size() == 1 ? 0 : c]);
  return fill;
}

// The `planes` planes of width x height at `data` placed on canvases of canvas_width x
// canvas_height as the header says, plane c's fill fill[c] (or fill[0] for all, one_fill).
inline void place_planes(std::vector<uint8_t>& data, int64_t planes, int64_t width, int64_t height,
                         int64_t left, int64_t top, int64_t canvas_width, int64_t canvas_height,
                         const uint8_t* fill, bool one_fill) {
  thread_local std::vector<uint8_t> out;
  const int64_t canvas = canvas_width * canvas_height;
  out.resize(static_cast<size_t>(planes * canvas));
  // The canvas columns [x0, x1) read the sample's columns from x0 + left.
  const int64_t x0 = std::clamp<int64_t>(-left, 0, canvas_width);
  const int64_t x1 = std::clamp<int64_t>(width - left, x0, canvas_width);
  for (int64_t c = 0; c < planes; ++c) {
    const uint8_t* plane = data.data() + c * height * width;
    uint8_t* to = out.data() + c * canvas;
    const uint8_t value = fill[one_fill ? 0 : c];
    for (int64_t y = 0; y < canvas_height; ++y, to += canvas_width) {
      const int64_t sy = y + top;
      if (sy < 0 || sy >= height || x1 == x0) {
        std::fill_n(to, canvas_width, value);
        continue;
      }
      std::fill_n(to, x0, value);
      std::copy_n(plane + sy * width + x0 + left, x1 - x0, to + x0);
      std::fill(to + x1, to + canvas_width, value);
    }
  }
  data.swap(out);
}

// The pixels of an unsettled `sample` placed as place_joint_sample says, its waiting resize
// (the image's window by PIL's bilinear, masks and class map by torch's nearest or PIL's), mirror
// and decoded layout applied on the way; its boxes and size are the caller's.
inline Status place_unsettled(JointSample& sample, int64_t left, int64_t top, int64_t canvas_width,
                              int64_t canvas_height, const CanvasFill& fill) {
  thread_local PlaneGather gather;
  thread_local std::vector<uint8_t> part;
  const int64_t width = sample.width, height = sample.height;
  const int64_t from_width = sample.pixels_width(), from_height = sample.pixels_height();
  gather.x0 = std::clamp<int64_t>(-left, 0, canvas_width);
  gather.x1 = std::clamp<int64_t>(width - left, gather.x0, canvas_width);
  gather.y0 = std::clamp<int64_t>(-top, 0, canvas_height);
  gather.y1 = std::clamp<int64_t>(height - top, gather.y0, canvas_height);
  // The nearest source row and column of each resized one: PIL's, or torch's.
  thread_local std::vector<int64_t> pil_rows, pil_columns;
  if (sample.pil_nearest) {
    pil_nearest_indices(from_height, height, pil_rows);
    pil_nearest_indices(from_width, width, pil_columns);
  }
  const auto row_of = [&](int64_t y) {
    return sample.pil_nearest ? pil_rows[y] : torch_nearest_index(y, from_height, height);
  };
  const auto column_of = [&](int64_t x) {
    return sample.pil_nearest ? pil_columns[x] : torch_nearest_index(x, from_width, width);
  };
  gather.rows.resize(static_cast<size_t>(gather.y1 - gather.y0));
  for (int64_t y = gather.y0; y < gather.y1; ++y) gather.rows[y - gather.y0] = row_of(y + top);
  gather.columns.resize(static_cast<size_t>(gather.x1 - gather.x0));
  for (int64_t x = gather.x0; x < gather.x1; ++x)
    gather.columns[x - gather.x0] = column_of(sample.mirrored ? width - 1 - (x + left) : x + left);
  const int64_t shown_width = gather.x1 - gather.x0, shown_height = gather.y1 - gather.y0;
  if (sample.resized_from_width > 0 && shown_width > 0 && shown_height > 0) {
    // The resized image's window the canvas shows (the mirror's: the columns mirrored back).
    const image::ResampleWindow window = {
        static_cast<int>(sample.mirrored ? width - (gather.x1 + left) : gather.x0 + left),
        static_cast<int>(gather.y0 + top), static_cast<int>(shown_width),
        static_cast<int>(shown_height)};
    part.resize(static_cast<size_t>(3 * shown_width * shown_height));
    STOKER_RETURN_IF_ERROR(resample_image(sample.image.data(), sample.interleaved, from_width,
                                          from_height, width, height, window, sample.mirrored,
                                          part.data()));
    if (shown_width != canvas_width || shown_height != canvas_height)
      place_planes(part, 3, shown_width, shown_height, -gather.x0, -gather.y0, canvas_width,
                   canvas_height, fill.image.data(), false);
    sample.image.swap(part);
  } else {
    if (sample.interleaved) {
      part.resize(sample.image.size());
      planes_of_rgb(sample.image.data(), from_width, from_height, part.data());
      sample.image.swap(part);
    }
    gather_planes(sample.image, 3, from_width, from_height, gather, canvas_width, canvas_height,
                  fill.image.data(), false);
  }
  if (sample.has_masks)
    gather_planes(sample.masks, sample.rows(), from_width, from_height, gather, canvas_width,
                  canvas_height, &fill.masks, true);
  if (sample.has_class_map)
    gather_planes(sample.class_map, 1, from_width, from_height, gather, canvas_width, canvas_height,
                  &fill.class_map, true);
  sample.resized_from_width = sample.resized_from_height = 0;
  sample.pil_nearest = false;
  sample.mirrored = false;
  sample.interleaved = false;
  return Status::ok();
}

// The waiting resize, mirror and decoded layout of `sample` applied to its pixels (nothing when
// settled; the layout alone in one pass).
inline Status settle_joint_sample(JointSample& sample) {
  if (sample.settled()) return Status::ok();
  if (sample.resized_from_width == 0 && !sample.mirrored) {
    thread_local std::vector<uint8_t> planes;
    planes.resize(sample.image.size());
    planes_of_rgb(sample.image.data(), sample.width, sample.height, planes.data());
    sample.image.swap(planes);
    sample.interleaved = false;
    return Status::ok();
  }
  return place_unsettled(sample, 0, 0, sample.width, sample.height, CanvasFill{});
}

// `sample` on a canvas_width x canvas_height canvas whose (0, 0) is the sample's (left, top);
// kInvalidArgument naming operation `op` for a canvas side outside 1..kMaxImageSize.
inline Status place_joint_sample(const char* op, JointSample& sample, int64_t left, int64_t top,
                                 int64_t canvas_width, int64_t canvas_height,
                                 const CanvasFill& fill) {
  if (canvas_width < 1 || canvas_height < 1 || canvas_width > kMaxImageSize ||
      canvas_height > kMaxImageSize)
    return invalid_argument(fmt::format("{}: the {}x{} image would be {}x{}", op, sample.width,
                                        sample.height, canvas_width, canvas_height));
  if (!sample.settled()) {
    STOKER_RETURN_IF_ERROR(place_unsettled(sample, left, top, canvas_width, canvas_height, fill));
  } else {
    place_planes(sample.image, 3, sample.width, sample.height, left, top, canvas_width,
                 canvas_height, fill.image.data(), false);
    if (sample.has_masks)
      place_planes(sample.masks, sample.rows(), sample.width, sample.height, left, top,
                   canvas_width, canvas_height, &fill.masks, true);
    if (sample.has_class_map)
      place_planes(sample.class_map, 1, sample.width, sample.height, left, top, canvas_width,
                   canvas_height, &fill.class_map, true);
  }
  const auto dx = static_cast<float>(left), dy = static_cast<float>(top);
  for (size_t k = 0; k < sample.boxes.size(); k += 4) {
    sample.boxes[k] -= dx;
    sample.boxes[k + 1] -= dy;
    sample.boxes[k + 2] -= dx;
    sample.boxes[k + 3] -= dy;
  }
  sample.width = canvas_width;
  sample.height = canvas_height;
  return Status::ok();
}

}  // namespace stoker::ops
