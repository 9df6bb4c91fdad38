#include "stoker/video/clip_sampler.h"

#include <algorithm>

#include "stoker/video/video_file.h"

namespace stoker::video {

Status ClipSampler::check() const {
  if (num_clips < 1) return invalid_argument("num_clips must be at least 1");
  if (frames_per_clip < 1) return invalid_argument("num_frames_per_clip must be at least 1");
  if (frame_step < 1) return invalid_argument("num_indices_between_frames must be at least 1");
  return Status::ok();
}

namespace {

// The frames of the clip starting at `start`, `policy` filling those past the end.
Status append_clip(const ClipSampler& sampler, int64_t start, int64_t frame_count,
                   const std::string& video, std::vector<int64_t>& out) {
  const int64_t span = sampler.frame_step * (sampler.frames_per_clip - 1) + 1;
  const size_t first = out.size();
  for (int64_t i = start; i < std::min(start + span, frame_count); i += sampler.frame_step)
    out.push_back(i);
  const int64_t have = static_cast<int64_t>(out.size() - first);
  if (have == sampler.frames_per_clip) return Status::ok();
  if (sampler.policy == ClipPolicy::kError)
    return invalid_argument(video_named(video) + ": the clip starting at frame " +
                            std::to_string(start) + " runs past its last frame " +
                            std::to_string(frame_count - 1) + " (policy \"error\")");
  for (int64_t k = have; k < sampler.frames_per_clip; ++k)
    out.push_back(sampler.policy == ClipPolicy::kWrap ? out[first + static_cast<size_t>(k % have)]
                                                      : out[first + static_cast<size_t>(have - 1)]);
  return Status::ok();
}

}  // namespace

Result<std::vector<int64_t>> clip_frame_indices(const ClipSampler& sampler, int64_t frame_count,
                                                CounterRng& rng, const std::string& video) {
  STOKER_RETURN_IF_ERROR(sampler.check());
  const std::string where = video_named(video) + " (" + std::to_string(frame_count) + " frames)";
  if (frame_count < 1) return invalid_argument(where + ": no frame to sample clips from");
  int64_t start = sampler.range_start < 0 ? frame_count + sampler.range_start : sampler.range_start;
  if (start < 0 || start >= frame_count)
    return invalid_argument(where + ": sampling_range_start " +
                            std::to_string(sampler.range_start) + " is outside it");
  const int64_t span = sampler.frame_step * (sampler.frames_per_clip - 1) + 1;
  int64_t end = 0;
  if (!sampler.range_end) {
    end = std::max<int64_t>(frame_count - span + 1, 1);
  } else {
    end = *sampler.range_end < 0 ? frame_count + *sampler.range_end : *sampler.range_end;
    end = std::min(end, frame_count);
  }
  if (start >= end)
    return invalid_argument(where + ": no clip starts in frames [" + std::to_string(start) + ", " +
                            std::to_string(end) + ")");

  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(sampler.num_clips * sampler.frames_per_clip));
  const int64_t n = sampler.num_clips;
  const double step = n > 1 ? static_cast<double>(end - 1 - start) / static_cast<double>(n - 1) : 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t clip_start = start;
    if (sampler.starts == ClipStarts::kRandom) {
      clip_start =
          start + static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(end - start)));
    } else if (n > 1) {
      // torch.linspace's two halves, in double, truncated to int.
      clip_start = k < n / 2
                       ? static_cast<int64_t>(static_cast<double>(start) + step * k)
                       : static_cast<int64_t>(static_cast<double>(end - 1) - step * (n - 1 - k));
    }
    STOKER_RETURN_IF_ERROR(append_clip(sampler, clip_start, frame_count, video, out));
  }
  return out;
}

}  // namespace stoker::video
