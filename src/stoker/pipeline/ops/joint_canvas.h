#pragma once
// A joint sample moved onto a canvas of another size, as torchvision's F.pad (constant fill) and
// F.crop move (image, target): canvas pixel (y, x) is the sample's (y + top, x + left) where
// that lies inside it, else the fill: a negative offset pads, a positive one crops. The image's
// planes fill with their own values, the object masks and the class map with theirs; each XYXY
// box moves by (-left, -top) in float32, as v2's pad and crop of boxes (clamping is the
// caller's): the joint operations that pad or cut with a fill.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/joint_sample.h"
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

// `sample` on a canvas_width x canvas_height canvas whose (0, 0) is the sample's (left, top);
// kInvalidArgument naming operation `op` for a canvas side outside 1..kMaxImageSize.
inline Status place_joint_sample(const char* op, JointSample& sample, int64_t left, int64_t top,
                                 int64_t canvas_width, int64_t canvas_height,
                                 const CanvasFill& fill) {
  if (canvas_width < 1 || canvas_height < 1 || canvas_width > kMaxImageSize ||
      canvas_height > kMaxImageSize)
    return invalid_argument(fmt::format("{}: the {}x{} image would be {}x{}", op, sample.width,
                                        sample.height, canvas_width, canvas_height));
  place_planes(sample.image, 3, sample.width, sample.height, left, top, canvas_width, canvas_height,
               fill.image.data(), false);
  if (sample.has_masks)
    place_planes(sample.masks, sample.rows(), sample.width, sample.height, left, top, canvas_width,
                 canvas_height, &fill.masks, true);
  if (sample.has_class_map)
    place_planes(sample.class_map, 1, sample.width, sample.height, left, top, canvas_width,
                 canvas_height, &fill.class_map, true);
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
