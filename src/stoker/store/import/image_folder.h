#pragma once
// ImageFolder importer: a folder of class folders of JPEG and PNG files (torchvision's
// ImageFolder layout) into an image dataset (store/image_record.h), record i being ImageFolder's
// sample i (image_folder_scan.h) or, shuffled, sample order[i] (below), label its class index,
// the class names in the manifest.
//
// If SRC holds train/ and val/ (or test/), each is an ImageFolder and they become OUT/train and
// OUT/test, which must have the same classes; otherwise SRC is one ImageFolder and OUT one
// dataset. The format of each file is read from its bytes (image/image_header.h), never its
// name. A JPEG is stored transcoded for cheap crops (image/jpeg_transcode.h: lossless, the same
// pixels), or as it is with `keep_original` or when the transcode cannot keep its pixels (a
// progressive JPEG whose scans leave bits unsent); a PNG as it is. With `max_side`, an image
// (JPEG or PNG) whose longer side exceeds it is instead decoded, resized (image/resample.h, PIL's
// antialiased bilinear) so that its longer side is max_side and stored as a new JPEG
// (image/jpeg_encode.h, quality 90), as FFCV's max_resolution does. Every image is checked here,
// so that a truncated or corrupt file is found at import rather than when training reads it:
// every stored image is decoded completely to RGB (image/decode.h), which reads all of its data,
// and its pixels go into the dataset's statistics (store/channel_statistics.h: per-channel mean
// and std in the manifest, which training normalises with).
//
// Bad files — not a JPEG or PNG, a truncated or corrupt image, more pixels than `max_pixels`,
// unreadable, not a regular file (a FIFO is never opened for reading in a way that blocks), a
// dangling link, larger than kMaxImageFileBytes — and the bad entries of the listing (symbolic
// link loops, unreadable directories) are each reported with a one-line reason. By default the
// import then fails and writes nothing; with `skip_bad` the other files are imported and the
// list goes to OUT/skipped.txt, unless every file of a split is bad: an empty dataset is no
// import, so that fails too. Either way nothing is left half-written (SplitWriter).
//
// Files are read, checked and encoded by a pool of `workers` threads and written in record order
// by the calling thread (util/ordered_map.h): the datasets are the same, byte for byte, for any
// number of workers. Memory holds a few images per worker.
//
// Record order: ImageFolder's (RecordOrder::kFolder, class by class), or with kShuffled a
// permutation of it drawn from `seed` (image_folder_order.h), so that every shard holds every
// class and a loader reading a few shards at a time (the shard-window shuffle) still mixes
// classes; the manifest records the seed (Manifest::record_shuffle_seed).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/store/import/image_folder_order.h"
#include "stoker/store/import/image_folder_scan.h"
#include "stoker/util/status.h"

namespace stoker {

// Files larger than this are bad, unread: it bounds the memory a worker holds for one file.
constexpr uint64_t kMaxImageFileBytes = uint64_t{256} << 20;
// Name of the list of skipped files written into OUT with skip_bad.
constexpr const char* kSkippedListName = "skipped.txt";

struct ImageFolderProgress {
  uint64_t done = 0;   // files handled (imported or bad)
  uint64_t total = 0;  // files to handle
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

struct ImageFolderImportOptions {
  std::string src;
  std::string out;             // must not exist (with splits: OUT/train and OUT/test must not)
  bool keep_original = false;  // store JPEGs as they are instead of transcoding them
  // 0: images are stored at their size. Else the longest side stored: an image whose longer side
  // exceeds it is downsized to max_side by round(shorter * max_side / longer) (at least 1) and
  // stored as a JPEG of quality 90, whatever its format and keep_original (images within the
  // limit are stored as without it). The record's height and width are then the stored image's;
  // original_size and original_checksum stay the file's. At most image::kMaxJpegSide.
  int max_side = 0;
  bool skip_bad = false;
  RecordOrder record_order = RecordOrder::kFolder;
  uint64_t seed = 0;  // of RecordOrder::kShuffled
  // Threads reading and checking files, as the loader's workers count: nullopt, one per core;
  // 0, the files one at a time (on one thread); else that many.
  std::optional<int> workers;
  uint64_t shard_bytes = uint64_t{256} << 20;
  int64_t max_pixels = image::kDefaultMaxPixels;  // images of more pixels are bad
  // Called on the calling thread after each file, in order. Optional.
  std::function<void(const ImageFolderProgress&)> on_progress;
  // Called on the calling thread for each bad file or entry (the listing's first, then files in
  // record order). Optional.
  std::function<void(const BadEntry&)> on_bad;
  // Polled on the calling thread after each file; true stops the import (kCancelled, nothing
  // written). Optional.
  std::function<bool()> stop_requested;
};

struct ImageFolderImportSummary {
  std::vector<std::string> datasets;  // written: OUT, or OUT/train and OUT/test
  uint64_t images = 0;                // records written
  uint64_t classes = 0;
  uint64_t bytes_in = 0;       // of the files imported
  uint64_t bytes_out = 0;      // of the images stored
  uint64_t ignored_files = 0;  // without an image extension, ignored as torchvision ignores them
  uint64_t skipped = 0;        // bad files and entries skipped (skip_bad)
  std::string skipped_list;    // OUT/skipped.txt if written
};

// Why `path` could not be read, from read_file's `status`: its error without the path it starts
// with, or "a dangling symbolic link".
std::string image_file_read_error(const Status& status, const std::string& path);

// Imports options.src into options.out as described above. Errors (one line): a max_side
// outside 0..image::kMaxJpegSide (kInvalidArgument); those of list_image_folder; SRC with both val/
// and test/; splits whose classes differ; OUT exists (kAlreadyExists); without skip_bad, any bad
// file (kCorrupt: "N bad files ... nothing written", each listed through on_bad first); with
// skip_bad, a split whose files are all bad (kCorrupt: "all N image files are bad"); writing
// the datasets; a stop requested (kCancelled).
Result<ImageFolderImportSummary> import_image_folder(const ImageFolderImportOptions& options);

}  // namespace stoker
