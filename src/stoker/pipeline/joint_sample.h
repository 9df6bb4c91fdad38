#pragma once
// JointSample: one detection or segmentation sample while its joint operations change it
// together (joint_pipeline.h): the image, its boxes and labels, its object masks, or its class
// map, as torchvision's v2 transforms see (image, target). Geometry moves all of them; dropping
// an object drops its box, label and mask together (keep_rows), unless the masks were kept. A
// resize and a mirror may wait on the pixels (ops/joint_canvas.h applies them, to the window a crop
// keeps where one follows).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stoker {

struct JointSample {
  int64_t height = 0, width = 0;  // the image's and every mask's
  std::vector<uint8_t> image;     // uint8 [3, height, width]
  std::vector<float> boxes;       // float32 [N, 4], XYXY in pixels
  std::vector<int64_t> labels;    // int64 [N]
  bool has_masks = false;
  std::vector<uint8_t> masks;  // uint8 [N, height, width] when has_masks, else empty
  // Masks that torchvision v1's SSD steps (the detection reference's RandomZoomOut and
  // RandomIoUCrop, which leave target["masks"] alone) keep as they are: taken out of the geometry
  // by keep_masks() with their own rows and size; only a flip mirrors them, on the way out.
  bool masks_kept = false;
  std::vector<uint8_t> kept_masks;  // uint8 [kept_rows, kept_height, kept_width], settled
  int64_t kept_rows = 0, kept_height = 0, kept_width = 0;
  bool kept_mirrored = false;
  bool has_class_map = false;
  std::vector<uint8_t> class_map;  // uint8 [height, width] class indices when has_class_map
  // Geometry waiting on the pixels, the boxes always current: with resized_from_width > 0 the
  // image, masks and class map hold resized_from_width x resized_from_height pixels that stand
  // for them resized to width x height (ops/joint_resize.h); then, when mirrored, mirrored left
  // to right. With interleaved, the image holds those pixels as decoded, [height, width, 3] RGB.
  // Operations see the pixels only settled (ops/joint_canvas.h), unless they say.
  int64_t resized_from_width = 0, resized_from_height = 0;
  // The waiting resize's masks and class map by PIL's NEAREST (torchvision v1 on a PIL mask),
  // else by torch's (v2 on a Mask).
  bool pil_nearest = false;
  bool mirrored = false;
  bool interleaved = false;

  int64_t rows() const { return static_cast<int64_t>(labels.size()); }
  bool settled() const { return resized_from_width == 0 && !mirrored && !interleaved; }
  int64_t pixels_width() const { return resized_from_width > 0 ? resized_from_width : width; }
  int64_t pixels_height() const { return resized_from_width > 0 ? resized_from_height : height; }

  // Takes the masks (settled) out of the geometry as they are now (nothing when kept already).
  void keep_masks() {
    if (!has_masks) return;
    kept_masks.swap(masks);
    masks.clear();
    kept_rows = rows();
    kept_height = height;
    kept_width = width;
    kept_mirrored = false;
    has_masks = false;
    masks_kept = true;
  }

  // Keeps the objects k with keep[k] set (rows() values), in their order: box, label and mask.
  void keep_rows(const std::vector<uint8_t>& keep) {
    const size_t plane = static_cast<size_t>(pixels_height() * pixels_width());
    size_t kept = 0;
    for (size_t k = 0; k < labels.size(); ++k) {
      if (!keep[k]) continue;
      if (kept != k) {
        std::copy_n(boxes.begin() + 4 * k, 4, boxes.begin() + 4 * kept);
        labels[kept] = labels[k];
        if (has_masks) std::copy_n(masks.begin() + k * plane, plane, masks.begin() + kept * plane);
      }
      ++kept;
    }
    boxes.resize(4 * kept);
    labels.resize(kept);
    if (has_masks) masks.resize(kept * plane);
  }
};

}  // namespace stoker
