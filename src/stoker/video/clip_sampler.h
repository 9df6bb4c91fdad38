#pragma once
// Which frames of a video make a sample's clips: torchcodec 0.17's index-based samplers
// (torchcodec.samplers.clips_at_random_indices and clips_at_regular_indices), their parameters
// and their rules, with the random clip starts drawn from stoker's counter-based stream instead
// of torch's generator (so a sample's clips do not depend on the worker or the resume point).
//
// A clip is `frames_per_clip` frames `frame_step` apart (torchcodec's num_indices_between_frames)
// from its start. Starts lie in [range_start, range_end): negative values count from the end;
// range_end unset is the last start whose clip fits (at least 1); a range_end past the video is
// cut to it. Random: each start is range_start + rng.uniform_below(range_end - range_start), one
// draw per clip, in clip order. Regular: torch.linspace(range_start, range_end - 1, num_clips)
// in int32, as torch computes it (step = (end - start) / (n - 1) in double; the first n / 2
// values start + step * i, the others end - step * (n - 1 - i), truncated). Frames past the
// video's end are replaced by `policy`: repeat the clip's last frame, wrap to its first ones, or
// fail.
//
// The timestamp samplers (clips_at_random_timestamps and clips_at_regular_timestamps) work in
// seconds of torchcodec's scanned metadata (VideoIndex::begin_seconds, end_seconds, average_fps):
// a clip is `frames_per_clip` sampling points `seconds_between_frames` apart (0: 1 / average_fps)
// from its start, each the frame shown then (VideoIndex::frame_played_at); points at or past
// the end are replaced by `policy`. Starts lie in [range_start_seconds, range_end_seconds): unset,
// the video's begin and end - (frames_per_clip - 1) * seconds_between_frames; the end is cut to
// the video's. Random: start + next_double() * (end - start), rounded as torch's float64 tensors
// round it, one draw per clip. Regular: torch.arange(start, end, seconds_between_clip_starts) in
// float64 as torch computes it on x86-64 (fused multiply-adds, in blocks of 8 values: see the
// .cc), so their number depends on the video.
//
// The VideoClips sampler (kVideoClips) takes no draw: a sample is one clip of its video, the
// one torchvision's VideoClips enumeration (video_clips.h: frames_per_clip frames,
// step_between_clips, frame_rate) numbers as the sample's part of the record (a dataset whose
// records give a sample per clip: SampleInput::part).
//
// The uniform-clips sampler (kUniformClips) is torchvision's UniformClipSampler over the
// VideoClips of the video resampled to every frame_step-th frame (frames_per_clip frames,
// step_between_clips 1: clip j is frames (j + t) * frame_step, of C = ceil(n / frame_step) -
// frames_per_clip + 1 clips): clips floor(torch.linspace(0, C - 1, num_clips)) in float32 as
// torch computes it (step = (C - 1) / (num_clips - 1) in float32; the first num_clips / 2
// values i * step, the others (C - 1) - step * (num_clips - 1 - i); one value: 0), as
// torchvision computes them from s, the video's first clip's index among its dataset's clips
// (the clips of the videos before it: linspace(s, s + C - 1) rounds otherwise than from 0 for
// some s): `first_clips` holds each record's s where the dataset's frame counts are known (0
// else). A video shorter than a clip (C < 1; torchvision leaves it out) gives its clip 0,
// `policy` filling the frames past its end.
//
// A dataset of clips_per_video(K) (clips_per_video.h: K samples a video) sets `of_video` K: a
// sample is clip `clip` (its part) of the K clips the sampler takes (num_clips K; num_clips
// as given must be 1).
//
// `subsample` n > 0 then keeps n frames of each clip, torchvision's UniformTemporalSubsample
// (positions torch.linspace(0, T - 1, n) in float32, truncated: the frames it picks from the
// decoded clip). Pure functions; thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/util/rng.h"
#include "stoker/util/status.h"
#include "stoker/video/video_index.h"

namespace stoker::video {

enum class ClipStarts {
  kRandom,
  kRegular,
  kRandomTimestamps,
  kRegularTimestamps,
  kVideoClips,
  kUniformClips
};
enum class ClipPolicy { kRepeatLast, kWrap, kError };

struct ClipSampler {
  ClipStarts starts = ClipStarts::kRandom;
  int64_t num_clips = 1;
  int64_t frames_per_clip = 1;
  int64_t frame_step = 1;
  int64_t range_start = 0;
  std::optional<int64_t> range_end;
  ClipPolicy policy = ClipPolicy::kRepeatLast;
  // The timestamp samplers' (0 and unset: their defaults, as above).
  double seconds_between_frames = 0;
  double seconds_between_clip_starts = 0;
  std::optional<double> range_start_seconds;
  std::optional<double> range_end_seconds;
  // kVideoClips': torchvision's VideoClips enumeration (with frames_per_clip).
  int64_t step_between_clips = 1;
  double frame_rate = 0;  // 0: the video's own
  int64_t subsample = 0;  // 0: every frame of a clip
  int64_t of_video = 0;   // K > 0: a sample is one of K clips of its video (above)
  // kUniformClips': each record's video's first clip's index among the dataset's clips
  // (uniform_first_clips), by record; null: each video's 0.
  std::shared_ptr<const std::vector<int64_t>> first_clips;

  // The frames each clip gives: subsample's, else frames_per_clip.
  int64_t clip_length() const { return subsample > 0 ? subsample : frames_per_clip; }

  // The first clip (torchvision's s) of the video of sample `sample`, record
  // sample / max(of_video, 1) (a dataset of clips_per_video(K): record r's samples r K + k).
  int64_t first_clip_of(int64_t sample) const;

  bool by_time() const {
    return starts == ClipStarts::kRandomTimestamps || starts == ClipStarts::kRegularTimestamps;
  }
  // kInvalidArgument naming the parameter: a count or step below 1, seconds not above 0 (regular
  // timestamps' seconds_between_clip_starts).
  Status check() const;
};

// The frame indices of every clip, clip after clip (num_clips * frames_per_clip of them), of a
// video of `frame_count` frames, the random starts drawn from `rng`; kUniformClips' from the
// dataset's clip `first_clip` (first_clip_of). A range that holds no start, or a clip past the
// end under kError: kInvalidArgument naming `video` and the range.
Result<std::vector<int64_t>> clip_frame_indices(const ClipSampler& sampler, int64_t frame_count,
                                                CounterRng& rng, const std::string& video,
                                                int64_t first_clip = 0);

// The same of any sampler, by index or by time, of the video `index` describes, each clip
// subsampled: the clips follow one another, so their number is the result's size /
// clip_length() (num_clips but for regular timestamps, which are at most num_clips: more is
// kInvalidArgument naming both). A range in seconds that holds no start, or
// a frame rate or point that the video has not: kInvalidArgument naming `video`. kVideoClips:
// the video's clip number `clip` (a clip it has not: kInvalidArgument naming `video`); with
// of_video, clip `clip` of the K clips.
Result<std::vector<int64_t>> clip_frame_indices(const ClipSampler& sampler, const VideoIndex& index,
                                                CounterRng& rng, const std::string& video,
                                                int64_t clip = 0, int64_t first_clip = 0);

// UniformClipSampler's clip indices over a video of `clips` clips, the first of which is the
// dataset's clip `first`: floor(torch.linspace(first, first + clips - 1, count)) in float32
// (above), less `first`; all 0 for clips < 1.
std::vector<int64_t> uniform_clip_indices(int64_t clips, int64_t count, int64_t first = 0);

// Each video's first clip (torchvision's s: the sum of the earlier videos' clip counts) of the
// videos of `frame_counts` frames, in the dataset's order, under kUniformClips' enumeration by
// `sampler` (frames_per_clip, frame_step); a video shorter than a clip counts none.
std::vector<int64_t> uniform_first_clips(const ClipSampler& sampler,
                                         const std::vector<int64_t>& frame_counts);

}  // namespace stoker::video
