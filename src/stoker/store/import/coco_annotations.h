#pragma once
// COCO's instances annotations (`annotations/instances_*.json`) read and checked: the images
// (sorted by id, as torchvision's CocoDetection lists them), the categories, and each image's
// objects in the file's order (pycocotools' `imgToAnns`), with their boxes, areas, crowd flags
// and segmentations kept as written. Every problem is one kInvalidArgument line naming the
// file and the image, annotation or category: no images, a box outside its image, an unknown image
// or category, a category id outside 0..kMaxClasses-1 (class names are indexed by id: coco.h), a
// malformed segmentation, a duplicate id. Pure: thread-safe.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/store/import/coco_mask.h"
#include "stoker/util/status.h"

namespace stoker {

// Largest annotations file read (COCO's train2017 instances are 448 MB).
inline constexpr uint64_t kMaxCocoJsonBytes = uint64_t{2} << 30;
// How far (in pixels) a box may reach past its image's edges: COCO's own boxes overshoot by
// rounding. Beyond it the box is refused.
inline constexpr double kCocoBoxSlack = 1.0;

struct CocoObject {
  int64_t id = 0;
  int64_t category_id = 0;
  std::array<double, 4> bbox{};  // x, y, width, height
  double area = 0;               // as written; the box's area where the file has none
  bool crowd = false;
  // The segmentation, one of: polygons (each x0, y0, x1, y1, ...), plain run-length counts, or
  // COCO's compact string of them; none where the file has none.
  std::vector<std::vector<double>> polygons;
  std::vector<int64_t> counts;
  std::string counts_text;
  bool has_counts = false;  // counts or counts_text holds the segmentation
};

struct CocoImage {
  int64_t id = 0;
  std::string file_name;  // relative to the images' directory: no absolute path, no ".."
  int64_t width = 0;
  int64_t height = 0;
  std::vector<CocoObject> objects;
};

struct CocoCategory {
  int64_t id = 0;
  std::string name;
};

struct CocoAnnotations {
  std::vector<CocoCategory> categories;  // in the file's order
  std::vector<CocoImage> images;         // by id
};

// Parses and checks `json`; `origin` (the file) starts every error.
Result<CocoAnnotations> parse_coco_annotations(std::string_view json, const std::string& origin);
// The file at `path`, at most kMaxCocoJsonBytes.
Result<CocoAnnotations> read_coco_annotations(const std::string& path);

// Paints the object's mask into `pixels` (image.height × image.width bytes, row-major): the
// union of its polygons, or its counts. A malformed segmentation is one line naming the
// annotation (not the file); an object with none paints nothing.
Status paint_coco_object(const CocoObject& object, const CocoImage& image, uint8_t* pixels);

}  // namespace stoker
