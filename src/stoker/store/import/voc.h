#pragma once
// Pascal VOC detection importer (`stoker convert voc`): a VOC year's folder (VOCdevkit/VOC2012:
// `ImageSets/Main/SPLIT.txt`, `Annotations/NAME.xml`, `JPEGImages/NAME.jpg`) into a detection
// dataset, one record per line of the split's list, in its order (torchvision's VOCDetection's).
// Record fields (docs/FORMAT.md, "Detection datasets"):
//   image          bytes          the JPEG, stored as ImageFolder's (stored_image.h)
//   height, width  int64          of the image; the annotation's <size> must agree
//   boxes          float32 [N, 4] XYXY as written (xmin, ymin, xmax, ymax: VOC's pixels from 1)
//   labels         int64 [N]      1 + the class's index in kVocClasses; the manifest's
//                                 class_names are "__background__" and the 20 classes
//   difficult      int64 [N]      0 or 1
// Every problem is one line naming the file (and the object): voc_annotation.h. Images are read
// on `workers` threads and written in order: the same dataset for any worker count.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "stoker/image/image_header.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

struct VocImportOptions {
  std::string src;              // VOCdevkit/VOC<year>
  std::string split = "train";  // ImageSets/Main/<split>.txt
  std::string out;              // the dataset to create; must not exist
  bool keep_original = false;   // store JPEGs as they are instead of transcoding them
  // Threads reading images: nullopt, one per core; 0, one at a time; else that many.
  std::optional<int> workers;
  uint64_t shard_bytes = uint64_t{256} << 20;
  int64_t max_pixels = image::kDefaultMaxPixels;
  // Polled after each image; true stops the import (kCancelled, nothing written). Optional.
  std::function<bool()> stop_requested;
};

struct VocImportSummary {
  uint64_t images = 0;
  uint64_t objects = 0;
};

// The schema above.
Schema voc_record_schema();

// Imports as described above. Errors (one line): the split's list missing or holding a name
// that is not a plain file stem, an annotation's (parse_voc_annotation), an image file missing
// or corrupt or of another size than its annotation's, an empty split, OUT exists
// (kAlreadyExists), a stop requested (kCancelled).
Result<VocImportSummary> import_voc(const VocImportOptions& options);

}  // namespace stoker
