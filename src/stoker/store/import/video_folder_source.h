#pragma once
// VideoFolderSource: class folders of videos, laid out as torchvision's Kinetics, UCF101 and
// HMDB51 datasets are (make_dataset(root, class_to_idx, extensions): image_folder_scan.h's
// listing with the video extensions), read in place as a class folder source
// (class_folder_source.h: its units, listing cache and bad files). Record i is sample i:
// {"video": the file's bytes as they are, "label": its class index (int64)}, the layout of a
// dataset written with those fields, so that a source operation (decode_clip) reads either
// alike. A file that cannot be read gives a record whose video is empty, a bad record naming
// it. Thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/store/import/class_folder_source.h"

namespace stoker {

// Files larger than this are bad, unread: it bounds the memory a unit holds.
constexpr uint64_t kMaxVideoFileBytes = uint64_t{2} << 30;

// A video folder's samples: the files ending with one of `extensions` (torchvision's Kinetics:
// {"avi", "mp4"}; UCF101 and HMDB51: {"avi"}).
ClassFolderFiles video_files(std::vector<std::string> extensions);

class VideoFolderSource : public ClassFolderSource {
 public:
  // Lists `root`'s files with `extensions` (list_class_folder's errors) and lays its samples
  // out in units; the listing cached as `options` says.
  static Result<std::shared_ptr<VideoFolderSource>> open(const std::string& root,
                                                         std::vector<std::string> extensions,
                                                         const ClassFolderSourceOptions& options);

  std::string describe() const override;

 private:
  VideoFolderSource() : ClassFolderSource(kMaxVideoFileBytes) {}
  std::vector<uint8_t> make_record(int64_t label, const std::string* file,
                                   std::string& bad) const override;
};

}  // namespace stoker
