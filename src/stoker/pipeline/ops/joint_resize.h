#pragma once
// A joint sample resized as torchvision's v2 F.resize resizes (image, target) of a PIL image
// (ops/random_shortest_size.cc, ops/random_resize.cc): the image by PIL's antialiased BILINEAR
// (Image.resize, image/resample.h), the object masks and the class map by torch's NEAREST
// (interpolate's source index floor(i * float(in / out)), in - 1 at most; i / 2 where
// out = 2 in), each XYXY box's x times float32(W' / W) and y times float32(H' / H), as v2's
// resize_bounding_boxes.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "stoker/image/resample.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/joint_sample.h"
#include "stoker/util/status.h"

namespace stoker::ops {

// torch's nearest source index of output index i (ATen's nearest_idx, no scale given).
inline int64_t torch_nearest_index(int64_t i, int64_t in, int64_t out) {
  if (out == in) return i;
  if (out == 2 * in) return i >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * scale)), in - 1);
}

// `planes` planes of width x height at `data` resized to new_width x new_height by torch's
// nearest.
inline void resize_planes_nearest(std::vector<uint8_t>& data, int64_t planes, int64_t width,
                                  int64_t height, int64_t new_width, int64_t new_height) {
  thread_local std::vector<uint8_t> resized;
  thread_local std::vector<int64_t> columns;
  columns.resize(static_cast<size_t>(new_width));
  for (int64_t x = 0; x < new_width; ++x) columns[x] = torch_nearest_index(x, width, new_width);
  resized.resize(static_cast<size_t>(planes * new_height * new_width));
  uint8_t* out = resized.data();
  for (int64_t k = 0; k < planes; ++k) {
    const uint8_t* plane = data.data() + k * height * width;
    for (int64_t y = 0; y < new_height; ++y, out += new_width) {
      const uint8_t* row = plane + torch_nearest_index(y, height, new_height) * width;
      for (int64_t x = 0; x < new_width; ++x) out[x] = row[columns[x]];
    }
  }
  data.swap(resized);
}

// The image planes [3, H, W] resized by PIL's BILINEAR (the resampler reads interleaved RGB).
inline Status resize_image_bilinear(JointSample& sample, int64_t new_width, int64_t new_height) {
  thread_local std::vector<uint8_t> interleaved, resized;
  thread_local image::Resampler resampler;
  const auto plane = static_cast<size_t>(sample.height * sample.width);
  interleaved.resize(3 * plane);
  for (size_t i = 0; i < plane; ++i) {
    for (size_t c = 0; c < 3; ++c) interleaved[3 * i + c] = sample.image[c * plane + i];
  }
  const image::RgbView view = {interleaved.data(), static_cast<int>(sample.width),
                               static_cast<int>(sample.height),
                               static_cast<ptrdiff_t>(3 * sample.width)};
  image::ResampleOutput out;
  out.width = static_cast<int>(new_width);
  out.height = static_cast<int>(new_height);
  out.type = image::ResampleOutput::Type::kUint8;
  resized.resize(static_cast<size_t>(3 * new_width * new_height));
  const image::PixelBox box = {0, 0, static_cast<double>(sample.width),
                               static_cast<double>(sample.height)};
  if (Status s = resampler.resample(view, box, out, resized.data()); !s.is_ok()) return s;
  sample.image.swap(resized);
  return Status::ok();
}

// The whole sample resized to new_width x new_height by operation `op` (named in an error).
inline Status resize_joint_sample(const char* op, JointSample& sample, int64_t new_width,
                                  int64_t new_height) {
  if (new_width == sample.width && new_height == sample.height) return Status::ok();
  if (new_width < 1 || new_height < 1 || new_width > kMaxImageSize || new_height > kMaxImageSize)
    return invalid_argument(fmt::format("{}: the {}x{} image would be {}x{}", op, sample.width,
                                        sample.height, new_width, new_height));
  if (Status s = resize_image_bilinear(sample, new_width, new_height); !s.is_ok()) return s;
  if (sample.has_masks)
    resize_planes_nearest(sample.masks, sample.rows(), sample.width, sample.height, new_width,
                          new_height);
  if (sample.has_class_map)
    resize_planes_nearest(sample.class_map, 1, sample.width, sample.height, new_width, new_height);
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
  sample.width = new_width;
  sample.height = new_height;
  return Status::ok();
}

}  // namespace stoker::ops
