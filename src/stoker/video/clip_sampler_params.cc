#include "stoker/video/clip_sampler_params.h"

#include "stoker/video/clips_per_video.h"
#include "stoker/video/video_clips.h"

namespace stoker::video {

std::vector<ParamSpec> clip_sampler_params() {
  return {
      ParamSpec::choice("sampler", "random",
                        {"random", "regular", "random_timestamps", "regular_timestamps",
                         "video_clips", "uniform_clips"},
                        "clip starts at random or regular indices, or times (torchcodec's "
                        "samplers); video_clips: the sample's clip of the clips its dataset "
                        "enumerates (VideoFolder's frames_per_clip: torchvision's VideoClips); "
                        "uniform_clips: torchvision's UniformClipSampler over the video's clips"),
      ParamSpec::integer("num_clips", 1, "clips per sample").in(1, 256),
      ParamSpec::integer("num_frames_per_clip", 16, "frames per clip").in(1, 4096),
      ParamSpec::integer("num_indices_between_frames", 1, "the step between a clip's frames")
          .in(1, 1 << 20),
      ParamSpec::integer("sampling_range_start", 0,
                         "the first frame a clip may start at (negative: from the end)")
          .in(-(int64_t{1} << 40), int64_t{1} << 40),
      ParamSpec::integer("sampling_range_end", 0,
                         "the frame before which clips start (negative: from the end; 0: the "
                         "last start whose clip fits, torchcodec's None)")
          .in(-(int64_t{1} << 40), int64_t{1} << 40),
      ParamSpec::real("seconds_between_frames", 0.0,
                      "by time: the seconds between a clip's frames (0: 1 / the average fps)")
          .in(0, 1e9),
      ParamSpec::real("seconds_between_clip_starts", 0.0,
                      "regular timestamps: the seconds between clip starts (above 0)")
          .in(0, 1e9),
      ParamSpec::reals("sampling_range_start_seconds", {},
                       "by time: [the first time a clip may start at]; []: the video's start", 0,
                       1),
      ParamSpec::reals("sampling_range_end_seconds", {},
                       "by time: [the time before which clips start]; []: the last start whose "
                       "clip fits",
                       0, 1),
      ParamSpec::integer("subsample", 0,
                         "UniformTemporalSubsample's frames of each clip (0: every frame)")
          .in(0, 4096),
      ParamSpec::choice("policy", "repeat_last", {"repeat_last", "wrap", "error"},
                        "frames past the video's end: the clip's last again, its first again, "
                        "or an error"),
  };
}

Result<ClipSampler> clip_sampler_from(const Params& p, const std::string& sample_parts,
                                      const RecordFrames& record_frames) {
  ClipSampler sampler;
  const std::string& starts = p.choice("sampler");
  sampler.starts = starts == "random"               ? ClipStarts::kRandom
                   : starts == "regular"            ? ClipStarts::kRegular
                   : starts == "random_timestamps"  ? ClipStarts::kRandomTimestamps
                   : starts == "regular_timestamps" ? ClipStarts::kRegularTimestamps
                   : starts == "uniform_clips"      ? ClipStarts::kUniformClips
                                                    : ClipStarts::kVideoClips;
  const std::optional<VideoClips> clips = VideoClips::from_text(sample_parts);
  if (sampler.starts == ClipStarts::kVideoClips && !clips)
    return invalid_argument(
        "sampler \"video_clips\" decodes the clips its dataset enumerates "
        "(stoker.VideoFolder(root, frames_per_clip=...)); this dataset's records are a sample "
        "each");
  if (sampler.starts != ClipStarts::kVideoClips && clips)
    return invalid_argument("this dataset's samples are its videos' clips, " + clips->text() +
                            ": decode each with sampler=\"video_clips\", not \"" + starts + "\"");
  sampler.num_clips = p.integer("num_clips");
  if (const std::optional<ClipsPerVideo> per_video = ClipsPerVideo::from_text(sample_parts)) {
    if (sampler.num_clips != 1)
      return invalid_argument("this dataset's samples are " + per_video->text() +
                              " of each video, one clip each: num_clips must be 1");
    sampler.of_video = per_video->count;
  }
  sampler.frames_per_clip = p.integer("num_frames_per_clip");
  sampler.frame_step = p.integer("num_indices_between_frames");
  sampler.range_start = p.integer("sampling_range_start");
  if (p.integer("sampling_range_end") != 0) sampler.range_end = p.integer("sampling_range_end");
  sampler.seconds_between_frames = p.real("seconds_between_frames");
  sampler.seconds_between_clip_starts = p.real("seconds_between_clip_starts");
  if (!p.reals("sampling_range_start_seconds").empty())
    sampler.range_start_seconds = p.reals("sampling_range_start_seconds")[0];
  if (!p.reals("sampling_range_end_seconds").empty())
    sampler.range_end_seconds = p.reals("sampling_range_end_seconds")[0];
  sampler.subsample = p.integer("subsample");
  if (clips) {  // the dataset's clip: its length and place
    sampler.frames_per_clip = clips->frames_per_clip;
    sampler.step_between_clips = clips->step_between_clips;
    sampler.frame_rate = clips->frame_rate;
  }
  const std::string& policy = p.choice("policy");
  sampler.policy = policy == "wrap"    ? ClipPolicy::kWrap
                   : policy == "error" ? ClipPolicy::kError
                                       : ClipPolicy::kRepeatLast;
  STOKER_RETURN_IF_ERROR(sampler.check());
  // One or two clips a video are its first and last whatever its offset: nothing to read.
  const int64_t per_video = sampler.of_video > 0 ? sampler.of_video : sampler.num_clips;
  if (sampler.starts == ClipStarts::kUniformClips && record_frames && per_video > 2) {
    STOKER_ASSIGN_OR_RETURN(const std::vector<int64_t> frames, record_frames());
    sampler.first_clips =
        std::make_shared<const std::vector<int64_t>>(uniform_first_clips(sampler, frames));
  }
  return sampler;
}

}  // namespace stoker::video
