#pragma once
// COCO importer (`stoker convert coco`): an instances annotations file and its images' directory
// into a detection dataset, one record per image in torchvision's CocoDetection order (by image
// id; images without objects too, unless drop_empty), the objects in the file's order. Record
// fields (docs/FORMAT.md, "Detection datasets"):
// - image: bytes, the JPEG or PNG, transcoded for crops as ImageFolder's (stored_image.h);
// - image_id, height, width: int64, of the image;
// - boxes: float32 [N, 4], XYXY in pixels: COCO's [x, y, w, h] as float32, then x + w and y + h
//   in float32, unclamped: what torchvision's v2 COCO wrapper (wrap_dataset_for_transforms_v2)
//   gives, which its detection models and its detection reference's v2 transforms take (clamped
//   with v1_targets);
// - labels: int64 [N], the category ids (COCO's 1..90; at most kMaxClasses - 1), as torchvision
//   keeps them; the manifest's class_names are indexed by id ("__background__" at 0, "N/A" for
//   unused ids);
// - area: float32 [N], as written; iscrowd: int64 [N], 0 or 1 (crowds kept but by v1_targets);
// - masks: bytes, one 8-bit grayscale PNG of width W and height N·H: object k's mask (0 or 1,
//   pycocotools' decode: coco_mask.h) is rows k·H to (k+1)·H; empty when N is 0. A PNG rather
//   than uint8 [N, H, W]: the format's rows have one shape per field, and deflate makes a mask
//   about 1% of its H·W bytes.
// Every problem is one line naming the file and the image or annotation (coco_annotations.h), and
// the import then writes nothing. Images are read, checked and encoded on `workers` threads and
// written in order (util/ordered_map.h): the same dataset for any worker count.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "stoker/image/image_header.h"
#include "stoker/store/import/coco_annotations.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

struct CocoImportOptions {
  std::string images;          // the images' directory (the file_names are relative to it)
  std::string annotations;     // instances_*.json
  std::string out;             // the dataset to create; must not exist
  bool keep_original = false;  // store JPEGs as they are instead of transcoding them
  // Leave out the images without a usable object, as torchvision's detection reference leaves
  // them out of its training set: no object, or every object's box (COCO's [x, y, w, h] as
  // written) of width or height <= 1. (The reference's keypoint rule needs keypoints, which
  // instances files lack.)
  bool drop_empty = false;
  // Store the targets of torchvision's v1 detection reference (its ConvertCocoPolysToMask):
  // crowds left out, each box clamped to the image (x to [0, W], y to [0, H], in float32), and
  // the objects whose clamped box is then empty (x1 <= x0 or y1 <= y0) left out too.
  bool v1_targets = false;
  // Threads reading and encoding images: nullopt, one per core; 0, one at a time; else that many.
  std::optional<int> workers;
  uint64_t shard_bytes = uint64_t{256} << 20;
  int64_t max_pixels = image::kDefaultMaxPixels;
  // Called on the calling thread after each image with (done, total). Optional.
  std::function<void(uint64_t, uint64_t)> on_progress;
  // Polled after each image; true stops the import (kCancelled, nothing written). Optional.
  std::function<bool()> stop_requested;
};

struct CocoImportSummary {
  uint64_t images = 0;
  uint64_t objects = 0;  // stored
  uint64_t dropped = 0;  // images left out by drop_empty
  uint64_t categories = 0;
  uint64_t bytes_in = 0;   // of the image files
  uint64_t bytes_out = 0;  // of the records
};

// The schema above.
Schema coco_record_schema();

// True if `image` has an object whose box is wider and taller than 1 pixel: what drop_empty keeps.
bool has_usable_object(const CocoImage& image);

// Imports as described above. Errors (one line): the annotations' (read_coco_annotations), every
// image dropped by drop_empty, an
// image file missing, unreadable or corrupt, or of another size than its annotation says, a
// malformed segmentation (naming the file and the annotation), OUT exists (kAlreadyExists), a
// stop requested (kCancelled).
Result<CocoImportSummary> import_coco(const CocoImportOptions& options);

}  // namespace stoker
