#include "stoker/video/clip_sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stoker/video/video_clips.h"
#include "stoker/video/video_file.h"

namespace stoker::video {

Status ClipSampler::check() const {
  if (num_clips < 1) return invalid_argument("num_clips must be at least 1");
  if (frames_per_clip < 1) return invalid_argument("num_frames_per_clip must be at least 1");
  if (frame_step < 1) return invalid_argument("num_indices_between_frames must be at least 1");
  if (!(seconds_between_frames >= 0))
    return invalid_argument("seconds_between_frames must be above 0");
  if (subsample < 0) return invalid_argument("subsample must be at least 0");
  if (starts == ClipStarts::kRegularTimestamps && !(seconds_between_clip_starts > 0))
    return invalid_argument("seconds_between_clip_starts must be above 0 for regular timestamps");
  if (starts == ClipStarts::kVideoClips) {
    if (num_clips != 1)
      return invalid_argument("num_clips must be 1 for video_clips: a sample is one clip");
    return VideoClips{frames_per_clip, step_between_clips, frame_rate}.check();
  }
  return Status::ok();
}

namespace {

// Fills `out` from `first` (holding `have` of them) to `count` values by `policy`.
template <typename T>
void fill_by_policy(ClipPolicy policy, size_t first, int64_t have, int64_t count,
                    std::vector<T>& out) {
  for (int64_t k = have; k < count; ++k)
    out.push_back(policy == ClipPolicy::kWrap ? out[first + static_cast<size_t>(k % have)]
                                              : out[first + static_cast<size_t>(have - 1)]);
}

Status past_the_end(const std::string& video, const std::string& start, const std::string& last) {
  return invalid_argument(video_named(video) + ": the clip starting at " + start +
                          " runs past its last " + last + " (policy \"error\")");
}

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
    return past_the_end(video, "frame " + std::to_string(start),
                        "frame " + std::to_string(frame_count - 1));
  fill_by_policy(sampler.policy, first, have, sampler.frames_per_clip, out);
  return Status::ok();
}

// torch.arange(start, end, step) in float64 on an x86-64 CPU: ceil((end - start) / step)
// values, made by its vectorised kernel as torch's wheel builds it (with FMA, 4 doubles a
// vector, two vectors a turn): a vector's base fma(step, i, start), its lanes fma(j, step,
// base); the values past the last whole turn one by one, fma(step, i, start). Found by
// comparing with torch on thousands of ranges, equal under its AVX2 and AVX-512 dispatch alike
// (ATEN_CPU_CAPABILITY=avx2, avx512); a plain start + i * step differs in the last bit for
// most of them, and so does torch's DEFAULT kernel (a CPU without AVX2).
std::vector<double> torch_arange(double start, double end, double step) {
  const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  std::vector<double> values;
  values.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (const int64_t vector : {i, i + 4}) {
      const double base = std::fma(step, static_cast<double>(vector), start);
      for (int j = 0; j < 4; ++j) values.push_back(std::fma(static_cast<double>(j), step, base));
    }
  }
  for (; i < n; ++i) values.push_back(std::fma(step, static_cast<double>(i), start));
  return values;
}

std::string seconds_text(double seconds) { return fmt::format("{}", seconds); }

// The clips' start times of a timestamp sampler, and its seconds between frames.
Result<std::vector<double>> clip_start_seconds(const ClipSampler& sampler, const VideoIndex& index,
                                               CounterRng& rng, const std::string& where,
                                               double between) {
  const double begin = index.begin_seconds(), end = index.end_seconds();
  double start = begin;
  if (sampler.range_start_seconds) {
    start = *sampler.range_start_seconds;
    if (start < begin || start >= end)
      return invalid_argument(where + ": sampling_range_start_seconds " + seconds_text(start) +
                              " is outside [" + seconds_text(begin) + ", " + seconds_text(end) +
                              ")");
  }
  double range_end = end - static_cast<double>(sampler.frames_per_clip - 1) * between;
  if (sampler.range_end_seconds) {
    range_end = *sampler.range_end_seconds;
    if (range_end <= begin)
      return invalid_argument(where + ": sampling_range_end_seconds " + seconds_text(range_end) +
                              " is not after its start " + seconds_text(begin));
  }
  if (start >= range_end)
    return invalid_argument(where + ": no clip starts in [" + seconds_text(start) + ", " +
                            seconds_text(range_end) + ") seconds");
  range_end = std::min(range_end, end);
  if (sampler.starts == ClipStarts::kRegularTimestamps) {
    std::vector<double> starts =
        torch_arange(start, range_end, sampler.seconds_between_clip_starts);
    starts.erase(
        std::remove_if(starts.begin(), starts.end(), [&](double s) { return s >= range_end; }),
        starts.end());
    if (static_cast<int64_t>(starts.size()) > sampler.num_clips)
      return invalid_argument(fmt::format("{}: its {} regular clips are more than num_clips {}",
                                          where, starts.size(), sampler.num_clips));
    return starts;
  }
  const double width = range_end - start;
  std::vector<double> starts;
  for (int64_t k = 0; k < sampler.num_clips; ++k) {
    const double scaled = rng.next_double() * width;  // torch.rand's draw, scaled, then moved
    starts.push_back(scaled + start);
  }
  return starts;
}

Result<std::vector<int64_t>> clip_frames_by_time(const ClipSampler& sampler,
                                                 const VideoIndex& index, CounterRng& rng,
                                                 const std::string& video) {
  const std::string where = video_named(video) + " (" + seconds_text(index.begin_seconds()) +
                            " to " + seconds_text(index.end_seconds()) + " s)";
  const double fps = index.average_fps();
  if (!(fps > 0)) return invalid_argument(where + ": no frame rate to sample clips by time");
  const double between =
      sampler.seconds_between_frames > 0 ? sampler.seconds_between_frames : 1 / fps;
  STOKER_ASSIGN_OR_RETURN(std::vector<double> starts,
                          clip_start_seconds(sampler, index, rng, where, between));
  std::vector<int64_t> out;
  for (const double start : starts) {
    std::vector<double> points;
    for (int64_t i = 0; i < sampler.frames_per_clip; ++i) {
      const double point = start + static_cast<double>(i) * between;
      if (point < index.end_seconds()) points.push_back(point);
    }
    const auto have = static_cast<int64_t>(points.size());
    if (have < sampler.frames_per_clip) {
      if (sampler.policy == ClipPolicy::kError || have == 0)
        return past_the_end(video, seconds_text(start) + " s",
                            "time " + seconds_text(index.end_seconds()) + " s");
      fill_by_policy(sampler.policy, 0, have, sampler.frames_per_clip, points);
    }
    for (const double point : points) {
      const int64_t frame = index.frame_played_at(point);
      if (frame < 0)
        return invalid_argument(where + ": no frame is shown at " + seconds_text(point) + " s");
      out.push_back(frame);
    }
  }
  return out;
}

// The clips of kUniformClips' enumeration of a video of `frame_count` frames (< 1: shorter than
// a clip).
int64_t uniform_clip_count(const ClipSampler& sampler, int64_t frame_count) {
  const int64_t s = sampler.frame_step;
  return (frame_count + s - 1) / s - sampler.frames_per_clip + 1;
}

// Each clip's frames (clips of `length`) at torchvision's uniform_temporal_subsample positions.
std::vector<int64_t> subsampled(const std::vector<int64_t>& frames, int64_t length, int64_t n) {
  const std::vector<int64_t> positions = uniform_clip_indices(length, n);
  std::vector<int64_t> out;
  out.reserve(frames.size() / static_cast<size_t>(length) * static_cast<size_t>(n));
  for (size_t clip = 0; clip < frames.size(); clip += static_cast<size_t>(length))
    for (const int64_t at : positions) out.push_back(frames[clip + static_cast<size_t>(at)]);
  return out;
}

// The frames of the uniform-clips sampler's clips (clip_sampler.h) of a video of `frame_count`.
Result<std::vector<int64_t>> uniform_clip_frames(const ClipSampler& sampler, int64_t frame_count,
                                                 const std::string& video, int64_t first_clip) {
  if (frame_count < 1)
    return invalid_argument(video_named(video) + ": no frame to sample clips from");
  const int64_t s = sampler.frame_step;
  std::vector<int64_t> out;
  for (const int64_t clip : uniform_clip_indices(uniform_clip_count(sampler, frame_count),
                                                 sampler.num_clips, first_clip))
    STOKER_RETURN_IF_ERROR(append_clip(sampler, clip * s, frame_count, video, out));
  return out;
}

}  // namespace

std::vector<int64_t> uniform_clip_indices(int64_t clips, int64_t count, int64_t first) {
  // torch.linspace(first, first + clips - 1, count) in float32 as its CPU kernel computes it
  // (each value one fused multiply-add, from the end for the second half; checked against
  // torch's AVX2 and AVX-512 dispatch for lengths 1 to 256 and count 1 to 128), then floor
  // (.long() of values >= 0), less `first`.
  std::vector<int64_t> positions(static_cast<size_t>(count), 0);
  if (clips < 1 || count == 1) return positions;  // one value: the start
  const float start = static_cast<float>(first);
  const float end = static_cast<float>(first + clips - 1);
  const float step = (end - start) / static_cast<float>(count - 1);
  for (int64_t i = 0; i < count; ++i) {
    const float value = i < count / 2 ? std::fma(step, static_cast<float>(i), start)
                                      : std::fma(-step, static_cast<float>(count - 1 - i), end);
    positions[static_cast<size_t>(i)] = static_cast<int64_t>(value) - first;
  }
  return positions;
}

std::vector<int64_t> uniform_first_clips(const ClipSampler& sampler,
                                         const std::vector<int64_t>& frame_counts) {
  std::vector<int64_t> first(frame_counts.size());
  int64_t s = 0;
  for (size_t v = 0; v < frame_counts.size(); ++v) {
    first[v] = s;
    if (frame_counts[v] > 0)
      s += std::max<int64_t>(uniform_clip_count(sampler, frame_counts[v]), 0);
  }
  return first;
}

int64_t ClipSampler::first_clip_of(int64_t sample) const {
  if (!first_clips) return 0;
  const int64_t record = sample / std::max<int64_t>(of_video, 1);
  return record >= 0 && record < static_cast<int64_t>(first_clips->size())
             ? (*first_clips)[static_cast<size_t>(record)]
             : 0;
}

Result<std::vector<int64_t>> clip_frame_indices(const ClipSampler& sampler, int64_t frame_count,
                                                CounterRng& rng, const std::string& video,
                                                int64_t first_clip) {
  STOKER_RETURN_IF_ERROR(sampler.check());
  if (sampler.starts == ClipStarts::kUniformClips)
    return uniform_clip_frames(sampler, frame_count, video, first_clip);
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

Result<std::vector<int64_t>> clip_frame_indices(const ClipSampler& sampler, const VideoIndex& index,
                                                CounterRng& rng, const std::string& video,
                                                int64_t clip, int64_t first_clip) {
  STOKER_RETURN_IF_ERROR(sampler.check());
  if (sampler.of_video > 0) {  // clip `clip` of the video's of_video clips
    ClipSampler all = sampler;
    all.num_clips = sampler.of_video;
    all.of_video = 0;
    STOKER_ASSIGN_OR_RETURN(std::vector<int64_t> frames,
                            clip_frame_indices(all, index, rng, video, 0, first_clip));
    const int64_t length = sampler.clip_length();
    if (clip < 0 || (clip + 1) * length > static_cast<int64_t>(frames.size()))
      return invalid_argument(fmt::format("{}: clip {} is not one of its {} clips",
                                          video_named(video), clip,
                                          static_cast<int64_t>(frames.size()) / length));
    return std::vector<int64_t>(frames.begin() + clip * length,
                                frames.begin() + (clip + 1) * length);
  }
  std::vector<int64_t> frames;
  if (sampler.starts == ClipStarts::kVideoClips) {
    const VideoClips clips{sampler.frames_per_clip, sampler.step_between_clips, sampler.frame_rate};
    Result<std::vector<int64_t>> enumerated =
        clips.frames(index.frame_count(), index.average_fps(), clip);
    if (!enumerated.is_ok())
      return invalid_argument(fmt::format("{} ({} frames at {} fps): {}", video_named(video),
                                          index.frame_count(), index.average_fps(),
                                          enumerated.status().message()));
    frames = std::move(enumerated).value();
  } else if (sampler.by_time()) {
    STOKER_ASSIGN_OR_RETURN(frames, clip_frames_by_time(sampler, index, rng, video));
  } else {
    STOKER_ASSIGN_OR_RETURN(
        frames, clip_frame_indices(sampler, index.frame_count(), rng, video, first_clip));
  }
  if (sampler.subsample == 0) return frames;
  return subsampled(frames, sampler.frames_per_clip, sampler.subsample);
}

}  // namespace stoker::video
