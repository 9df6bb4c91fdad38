#pragma once
// Image + mask folder importer (`stoker convert masks`): a folder of images and a folder of PNG
// class masks (a pixel's value its class: 8-bit gray or palette PNGs, as VOC's
// SegmentationClass), paired by file stem ("0001.jpg" with "0001.png"), into a segmentation
// dataset, one record per pair in stem order (bytewise). Record fields (docs/FORMAT.md,
// "Segmentation datasets"):
//   image          bytes  the JPEG or PNG, stored as ImageFolder's (stored_image.h)
//   mask           bytes  the mask's PNG file as it is: PIL's Image.open gives its class indices
//                         (mode "L" or "P"), as torchvision's segmentation reference reads it
//   height, width  int64  of both
// Only files directly in each folder with an image extension (kImageExtensions) are listed; a
// mask must be a PNG. Every problem is one line naming the file (both files for a mask of
// another size than its image), and the import then writes nothing. Pairs are read and checked
// on `workers` threads and written in order: the same dataset for any worker count.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "stoker/image/image_header.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

struct MaskFolderImportOptions {
  std::string images;          // the images' folder
  std::string masks;           // the masks' folder
  std::string out;             // the dataset to create; must not exist
  bool keep_original = false;  // store JPEGs as they are instead of transcoding them
  // Threads reading and checking pairs: nullopt, one per core; 0, one at a time; else that many.
  std::optional<int> workers;
  uint64_t shard_bytes = uint64_t{256} << 20;
  int64_t max_pixels = image::kDefaultMaxPixels;
  // Polled after each pair; true stops the import (kCancelled, nothing written). Optional.
  std::function<bool()> stop_requested;
};

struct MaskFolderImportSummary {
  uint64_t pairs = 0;
  uint64_t bytes_in = 0;   // of the files
  uint64_t bytes_out = 0;  // of the records
};

// The schema above.
Schema mask_record_schema();

// Imports as described above. Errors (one line): a folder that cannot be listed, two images or
// masks of one stem, an image without a mask or a mask without an image, a file unreadable or
// corrupt, a mask that is not an 8-bit gray or palette PNG or not of its image's size, no pairs at
// all, OUT exists (kAlreadyExists), a stop requested (kCancelled).
Result<MaskFolderImportSummary> import_mask_folder(const MaskFolderImportOptions& options);

}  // namespace stoker
