#pragma once
// VideoFolderSource: class folders of videos, laid out as torchvision's Kinetics, UCF101 and
// HMDB51 datasets are (make_dataset(root, class_to_idx, extensions): image_folder_scan.h's
// listing with the video extensions), read in place as a class folder source
// (class_folder_source.h: its units, listing cache and bad files). Record i is sample i, a video
// record (video_record.h: the file's bytes and its class index). A file that cannot be read, or
// larger than kMaxVideoFileBytes, gives a record whose video is empty, a bad record naming it.
//
// With a VideoClips enumeration (video/video_clips.h: torchvision's VideoClips, as its Kinetics,
// UCF101 and HMDB51 take frames_per_clip, step_between_clips and frame_rate), sample i is a clip
// instead: every video is indexed at open (its frames and average rate, video/video_index.h,
// kept in the cache folder beside the listing by each file's path, size and modification time,
// so later opens read no video), and gives its clips, in torchvision's order: video r's clips
// 0..K_r-1 after video r-1's (a video shorter than a clip gives none). Each clip's record is its
// video's record (the file's bytes held once: ShardReader::in_memory's parts), which clip it is
// SampleInput::part, and Manifest::sample_parts names the enumeration, which decode_clip's
// sampler "video_clips" reads. A video that cannot be indexed gives one sample, bad, naming it.
// With a ClipsPerVideo count K instead (video/clips_per_video.h: torchvision's video reference's
// clips per video), every video gives K samples, its clips 0..K-1 (nothing read at open), which
// decode_clip's other samplers take one each. Thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/import/class_folder_source.h"
#include "stoker/store/import/video_record.h"
#include "stoker/video/clips_per_video.h"
#include "stoker/video/video_clips.h"

namespace stoker {

// A video folder's samples: the files ending with one of `extensions` (torchvision's Kinetics:
// {"avi", "mp4"}; UCF101 and HMDB51: {"avi"}).
ClassFolderFiles video_files(std::vector<std::string> extensions);

class VideoFolderSource : public ClassFolderSource {
 public:
  // Lists `root`'s files with `extensions` (list_class_folder's errors) and lays its samples
  // out in units; the listing cached as `options` says. With `clips`, the samples are the
  // videos' clips (above; `clips`' check: one line naming the argument); with
  // `clips_per_video` above 1, K of each video (not with `clips`).
  static Result<std::shared_ptr<VideoFolderSource>> open(
      const std::string& root, std::vector<std::string> extensions,
      const ClassFolderSourceOptions& options,
      const std::optional<video::VideoClips>& clips = std::nullopt, int64_t clips_per_video = 1);
  // The folder `location` as `listing` lists it (a remote one: access/remote_image_folder.h's
  // listing with video_files), sample i's file being `files`' file i (or the bytes
  // options.record_bytes gives: a reference to it); a sample per video, or `clips_per_video` K
  // of each where its records are references (K above 1 for files read whole: one line).
  static Result<std::shared_ptr<VideoFolderSource>> open_listed(
      std::string location, ImageFolderListing listing, std::shared_ptr<const InPlaceFiles> files,
      const ClassFolderSourceOptions& options, int64_t clips_per_video = 1);
  // The number of clips each listed video gives (with `clips`; empty otherwise): torchvision's
  // VideoClips' clip counts, whose sums are its cumulative_sizes.
  const std::vector<int64_t>& clip_counts() const { return clip_counts_; }

  std::string describe() const override;

 private:
  VideoFolderSource() : ClassFolderSource(kMaxVideoFileBytes) {}
  std::vector<uint8_t> make_record(int64_t label, const std::string* file,
                                   std::string& bad) const override;

  std::vector<int64_t> clip_counts_;
};

}  // namespace stoker
