#pragma once
// torchvision's VideoClips enumeration (torchvision.datasets.video_utils, as its Kinetics,
// UCF101 and HMDB51 datasets use it): every clip of `frames_per_clip` frames of a video, clips
// `step_between_clips` apart, after the video is resampled to `frame_rate` frames per second.
// torchvision 0.26 reads a video's frames and rate from torchcodec's scanned metadata
// (num_frames and average_fps: VideoIndex::frame_count and average_fps), its "pts" being the
// frame indices 0..n-1, so a clip is a list of frame indices. compute_clips_for_video(pts,
// num_frames, step, fps, frame_rate):
//
//   s = fps / frame_rate (frame_rate unset: the video's fps), in double;
//   s a whole number: the resampled video is frames 0, s, 2s, ... (ceil(n / s) of them);
//   else it is floor(float32(p) * float32(s)) for p < floor(n * frame_rate / fps) (torch's
//   float32 arange times a Python float, floored);
//   clip j is resampled frames j * step .. j * step + frames_per_clip - 1, for
//   j < (L - frames_per_clip) / step + 1 (none where the resampled video, L frames, is shorter
//   than a clip).
//
// Pure functions of the video's frame count and rate; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker::video {

struct VideoClips {
  int64_t frames_per_clip = 16;
  int64_t step_between_clips = 1;
  double frame_rate = 0;  // frames per second to resample to; 0: the video's own

  // kInvalidArgument naming the argument: frames_per_clip or step_between_clips below 1, a
  // frame_rate below 0 (or not a number).
  Status check() const;
  // The clips of a video of `frame_count` frames at `fps` frames per second (its average:
  // VideoIndex::average_fps). kInvalidArgument for an fps not above 0: torchvision divides by
  // it.
  Result<int64_t> count(int64_t frame_count, double fps) const;
  // The frame indices of clip `clip` (< count) of that video: frames_per_clip of them.
  // kInvalidArgument naming the clip and the count for a clip past the last.
  Result<std::vector<int64_t>> frames(int64_t frame_count, double fps, int64_t clip) const;

  // One line that names the enumeration: "video_clips(frames_per_clip=16,
  // step_between_clips=1, frame_rate=none)" (what a dataset's Manifest::sample_parts holds).
  std::string text() const;
  // The enumeration `text` names (text()'s form), or nullopt for any other text.
  static std::optional<VideoClips> from_text(const std::string& text);
};

}  // namespace stoker::video
