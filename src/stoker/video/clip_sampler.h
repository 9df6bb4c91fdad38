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
// fail. Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/util/rng.h"
#include "stoker/util/status.h"

namespace stoker::video {

enum class ClipStarts { kRandom, kRegular };
enum class ClipPolicy { kRepeatLast, kWrap, kError };

struct ClipSampler {
  ClipStarts starts = ClipStarts::kRandom;
  int64_t num_clips = 1;
  int64_t frames_per_clip = 1;
  int64_t frame_step = 1;
  int64_t range_start = 0;
  std::optional<int64_t> range_end;
  ClipPolicy policy = ClipPolicy::kRepeatLast;

  // kInvalidArgument naming the parameter: a count or step below 1.
  Status check() const;
};

// The frame indices of every clip, clip after clip (num_clips * frames_per_clip of them), of a
// video of `frame_count` frames, the random starts drawn from `rng`. A range that holds no
// start, or a clip past the end under kError: kInvalidArgument naming `video` and the range.
Result<std::vector<int64_t>> clip_frame_indices(const ClipSampler& sampler, int64_t frame_count,
                                                CounterRng& rng, const std::string& video);

}  // namespace stoker::video
