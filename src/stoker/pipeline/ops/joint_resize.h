#pragma once
// A joint sample resized as torchvision's v2 F.resize resizes (image, target) of a PIL image
// (ops/random_shortest_size.cc, ops/random_resize.cc): the image by PIL's antialiased BILINEAR
// (Image.resize, image/resample.h), the object masks and the class map by torch's NEAREST
// (interpolate's source index floor(i * float(in / out)), in - 1 at most; i / 2 where
// out = 2 in) or, as v1 resizes a PIL mask, PIL's (ops/joint_planes.h), each XYXY box's x times
// float32(W' / W) and y times float32(H' / H), as v2's resize_bounding_boxes.

#include <fmt/format.h>

#include <cstdint>

#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/joint_sample.h"
#include "stoker/pipeline/ops/joint_canvas.h"
#include "stoker/util/status.h"

namespace stoker::ops {

// The whole sample resized to new_width x new_height by operation `op` (named in an error): the
// boxes now, the pixels when settled or placed on a canvas (ops/joint_canvas.h), after the
// geometry that waited before; the masks and class map by PIL's NEAREST with `pil_nearest`
// (torchvision v1 on a PIL mask).
inline Status resize_joint_sample(const char* op, JointSample& sample, int64_t new_width,
                                  int64_t new_height, bool pil_nearest = false) {
  if (new_width == sample.width && new_height == sample.height) return Status::ok();
  if (new_width < 1 || new_height < 1 || new_width > kMaxImageSize || new_height > kMaxImageSize)
    return invalid_argument(fmt::format("{}: the {}x{} image would be {}x{}", op, sample.width,
                                        sample.height, new_width, new_height));
  if (sample.resized_from_width > 0 || sample.mirrored)
    STOKER_RETURN_IF_ERROR(settle_joint_sample(sample));
  const auto x_ratio =
      static_cast<float>(static_cast<double>(new_width) / static_cast<double>(sample.width));
  const auto y_ratio =
      static_cast<float>(static_cast<double>(new_height) / static_cast<double>(sample.height));
  for (size_t k = 0; k < sample.boxes.size(); k += 4) {
    sample.boxes[k] *= x_ratio;
    sample.boxes[k + 1] *= y_ratio;
    sample.boxes[k + 2] *= x_ratio;
    sample.boxes[k + 3] *= y_ratio;
  }
  sample.resized_from_width = sample.width;
  sample.resized_from_height = sample.height;
  sample.pil_nearest = pil_nearest;
  sample.width = new_width;
  sample.height = new_height;
  return Status::ok();
}

}  // namespace stoker::ops
