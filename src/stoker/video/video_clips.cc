#include "stoker/video/video_clips.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace stoker::video {
namespace {

// The resampled video of `frame_count` frames at `fps`: its length, and its frame step when
// it is a whole number (0 otherwise: the float32 indices of resampled_frame).
struct Resampled {
  int64_t length = 0;
  int64_t whole_step = 0;
  float step = 0;
};

Resampled resampled(int64_t frame_count, double fps, double frame_rate) {
  const double rate = frame_rate > 0 ? frame_rate : fps;
  const double step = fps / rate;  // torchvision's original_fps / new_fps
  Resampled out;
  if (step == std::floor(step) && step <= 9.0e15) {  // step.is_integer(): slice(None, None, step)
    out.whole_step = static_cast<int64_t>(step);
    out.length = (frame_count + out.whole_step - 1) / out.whole_step;
    return out;
  }
  // int(math.floor(len(video_pts) * frame_rate / fps)), in double as Python computes it.
  const double total = static_cast<double>(frame_count) * rate / fps;
  out.length = total >= 9.0e15 ? int64_t{1} << 53 : static_cast<int64_t>(std::floor(total));
  out.step = static_cast<float>(step);
  return out;
}

// Resampled frame p's index in the video: p * step, or floor(float32(p) * float32(step)).
int64_t resampled_frame(const Resampled& r, int64_t p) {
  if (r.whole_step > 0) return p * r.whole_step;
  const float product = static_cast<float>(p) * r.step;  // torch's float32 multiply, no FMA
  return static_cast<int64_t>(std::floor(product));
}

int64_t clips_of(const Resampled& r, const VideoClips& clips) {
  if (r.length < clips.frames_per_clip) return 0;
  return (r.length - clips.frames_per_clip) / clips.step_between_clips + 1;
}

Status no_rate(double fps) {
  return invalid_argument(
      fmt::format("its average frame rate {} is not above 0: no clips to enumerate", fps));
}

}  // namespace

Status VideoClips::check() const {
  if (frames_per_clip < 1)
    return invalid_argument(fmt::format("frames_per_clip {} must be at least 1", frames_per_clip));
  if (step_between_clips < 1)
    return invalid_argument(
        fmt::format("step_between_clips {} must be at least 1", step_between_clips));
  if (!(frame_rate >= 0) || std::isinf(frame_rate))
    return invalid_argument(
        fmt::format("frame_rate {} must be above 0 (none: the video's own)", frame_rate));
  return Status::ok();
}

Result<int64_t> VideoClips::count(int64_t frame_count, double fps) const {
  STOKER_RETURN_IF_ERROR(check());
  if (!(fps > 0) || std::isinf(fps)) return no_rate(fps);
  return clips_of(resampled(frame_count, fps, frame_rate), *this);
}

Result<std::vector<int64_t>> VideoClips::frames(int64_t frame_count, double fps,
                                                int64_t clip) const {
  STOKER_RETURN_IF_ERROR(check());
  if (!(fps > 0) || std::isinf(fps)) return no_rate(fps);
  const Resampled r = resampled(frame_count, fps, frame_rate);
  const int64_t count = clips_of(r, *this);
  if (clip < 0 || clip >= count)
    return invalid_argument(fmt::format(
        "clip {} is not one of its {} clips of {} frames (has the file changed since it was "
        "indexed?)",
        clip, count, frames_per_clip));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(frames_per_clip));
  for (int64_t t = 0; t < frames_per_clip; ++t) {
    const int64_t frame = resampled_frame(r, clip * step_between_clips + t);
    if (frame >= frame_count)  // float32 rounding up to the end: torchvision's decode fails too
      return invalid_argument(fmt::format("clip {} resamples to frame {}, past its last, {}", clip,
                                          frame, frame_count - 1));
    out.push_back(frame);
  }
  return out;
}

std::string VideoClips::text() const {
  return fmt::format("video_clips(frames_per_clip={}, step_between_clips={}, frame_rate={})",
                     frames_per_clip, step_between_clips,
                     frame_rate > 0 ? fmt::format("{}", frame_rate) : std::string("none"));
}

std::optional<VideoClips> VideoClips::from_text(const std::string& text) {
  long long frames = 0, step = 0;
  char rate[64] = {};
  int end = 0;
  if (std::sscanf(
          text.c_str(),
          "video_clips(frames_per_clip=%lld, step_between_clips=%lld, frame_rate=%63[^)])%n",
          &frames, &step, rate, &end) != 3 ||
      static_cast<size_t>(end) != text.size())
    return std::nullopt;
  VideoClips clips;
  clips.frames_per_clip = frames;
  clips.step_between_clips = step;
  if (std::string(rate) != "none") {
    char* rest = nullptr;
    clips.frame_rate = std::strtod(rate, &rest);
    if (*rest != '\0' || !(clips.frame_rate > 0)) return std::nullopt;
  }
  if (!clips.check().is_ok() || clips.text() != text) return std::nullopt;
  return clips;
}

}  // namespace stoker::video
