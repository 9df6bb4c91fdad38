#include "stoker/video/clip_sampler.h"

#include <gtest/gtest.h>

#include "stoker/video/clip_sampler_params.h"

namespace stoker::video {
namespace {

std::vector<int64_t> frames_of(const ClipSampler& sampler, int64_t frame_count, uint64_t seed = 1) {
  CounterRng rng(seed, 7);
  Result<std::vector<int64_t>> frames = clip_frame_indices(sampler, frame_count, rng, "v.mp4");
  EXPECT_TRUE(frames.is_ok()) << frames.status().message();
  return frames.is_ok() ? frames.value() : std::vector<int64_t>{};
}

std::string error_of(const ClipSampler& sampler, int64_t frame_count) {
  CounterRng rng(1, 7);
  Result<std::vector<int64_t>> frames = clip_frame_indices(sampler, frame_count, rng, "v.mp4");
  return frames.is_ok() ? "ok" : frames.status().message();
}

ClipSampler regular(int64_t clips, int64_t per_clip, int64_t step) {
  ClipSampler s;
  s.starts = ClipStarts::kRegular;
  s.num_clips = clips;
  s.frames_per_clip = per_clip;
  s.frame_step = step;
  return s;
}

// torchcodec's regular starts are torch.linspace(0, 100 - 10, 4) in int32: 0, 30, 60, 90.
TEST(ClipSampler, RegularStartsAreTorchLinspaceOfTheRange) {
  EXPECT_EQ(frames_of(regular(4, 2, 9), 100), (std::vector<int64_t>{0, 9, 30, 39, 60, 69, 90, 99}));
  // 3 clips over starts [0, 7): linspace(0, 6, 3) = 0, 3, 6; the second half from the end.
  EXPECT_EQ(frames_of(regular(3, 1, 1), 7), (std::vector<int64_t>{0, 3, 6}));
  // linspace(0, 9, 4) = 0, 3, 6, 9 (3.0 * 1 and 9 - 3.0 * 1 exactly); (0, 10, 4): 0, 3, 6, 10.
  EXPECT_EQ(frames_of(regular(4, 1, 1), 10), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(frames_of(regular(4, 1, 1), 11), (std::vector<int64_t>{0, 3, 6, 10}));
  EXPECT_EQ(frames_of(regular(1, 3, 1), 10), (std::vector<int64_t>{0, 1, 2}));
}

TEST(ClipSampler, RandomStartsStayInTheRangeAndDependOnTheStreamOnly) {
  ClipSampler s;
  s.num_clips = 50;
  s.frames_per_clip = 4;
  s.frame_step = 3;
  const std::vector<int64_t> frames = frames_of(s, 40);
  ASSERT_EQ(frames.size(), 200u);
  for (size_t c = 0; c < 50; ++c) {
    EXPECT_LE(frames[c * 4], 40 - 10);  // the last start whose clip fits
    for (size_t k = 1; k < 4; ++k) EXPECT_EQ(frames[c * 4 + k], frames[c * 4] + 3 * int64_t(k));
  }
  EXPECT_EQ(frames, frames_of(s, 40));
  EXPECT_NE(frames, frames_of(s, 40, 2));
  // Each start is range_start + uniform_below(range size), one draw per clip.
  CounterRng rng(1, 7);
  EXPECT_EQ(frames[0], static_cast<int64_t>(rng.uniform_below(31)));
  EXPECT_EQ(frames[4], static_cast<int64_t>(rng.uniform_below(31)));
}

TEST(ClipSampler, PoliciesFillFramesPastTheEnd) {
  ClipSampler s = regular(1, 5, 2);
  s.range_start = 95;
  s.range_end = 96;
  EXPECT_EQ(frames_of(s, 100), (std::vector<int64_t>{95, 97, 99, 99, 99}));
  s.policy = ClipPolicy::kWrap;
  EXPECT_EQ(frames_of(s, 100), (std::vector<int64_t>{95, 97, 99, 95, 97}));
  s.policy = ClipPolicy::kError;
  EXPECT_EQ(error_of(s, 100),
            "video v.mp4: the clip starting at frame 95 runs past its last frame 99 (policy "
            "\"error\")");
}

TEST(ClipSampler, RangesCountFromTheEndAndAreCutToTheVideo) {
  ClipSampler s = regular(2, 1, 1);
  s.range_start = -10;
  s.range_end = -2;
  EXPECT_EQ(frames_of(s, 100), (std::vector<int64_t>{90, 97}));
  s.range_end = 1000;  // cut to the video: starts [90, 100)
  EXPECT_EQ(frames_of(s, 100), (std::vector<int64_t>{90, 99}));
  // A video shorter than a clip: the range is [0, 1) and the policy fills the clip.
  ClipSampler longer = regular(1, 4, 1);
  EXPECT_EQ(frames_of(longer, 2), (std::vector<int64_t>{0, 1, 1, 1}));
}

TEST(ClipSampler, BadRangesAndCountsAreOneLineErrors) {
  ClipSampler s;
  s.range_start = 100;
  EXPECT_EQ(error_of(s, 100), "video v.mp4 (100 frames): sampling_range_start 100 is outside it");
  s.range_start = -101;
  EXPECT_EQ(error_of(s, 100), "video v.mp4 (100 frames): sampling_range_start -101 is outside it");
  s.range_start = 10;
  s.range_end = 10;
  EXPECT_EQ(error_of(s, 100), "video v.mp4 (100 frames): no clip starts in frames [10, 10)");
  ClipSampler none;
  EXPECT_EQ(error_of(none, 0), "video v.mp4 (0 frames): no frame to sample clips from");
  none.frame_step = 0;
  EXPECT_EQ(error_of(none, 10), "num_indices_between_frames must be at least 1");
}

// sampler "video_clips" takes its clip from the dataset's enumeration (Manifest::sample_parts)
// and the sample's part; a dataset of clips takes no other sampler, and one of videos not it.
TEST(ClipSampler, VideoClipsAreTheDatasetsEnumeration) {
  const std::string parts = "video_clips(frames_per_clip=4, step_between_clips=3, frame_rate=none)";
  const auto sampler = [&](const std::string& name, const std::string& dataset) {
    const Params p =
        bind_params("decode_clip", clip_sampler_params(), {{"sampler", name}}).value_or_throw();
    return clip_sampler_from(p, dataset);
  };
  const ClipSampler s = sampler("video_clips", parts).value_or_throw();
  EXPECT_EQ(s.clip_length(), 4);
  VideoIndex index;  // 10 frames at 25 fps
  index.time_base_num = 1;
  index.time_base_den = 25;
  for (int64_t i = 0; i < 10; ++i) index.pts.push_back(i);
  index.end_pts = 10;
  CounterRng rng(1, 7);
  EXPECT_EQ(clip_frame_indices(s, index, rng, "v.mp4", 2).value_or_throw(),
            (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_EQ(clip_frame_indices(s, index, rng, "v.mp4", 3).status().message(),
            "video v.mp4 (10 frames at 25 fps): clip 3 is not one of its 3 clips of 4 frames (has "
            "the file changed since it was indexed?)");
  EXPECT_EQ(sampler("random", parts).status().message(),
            "this dataset's samples are its videos' clips, " + parts +
                ": decode each with sampler=\"video_clips\", not \"random\"");
  EXPECT_NE(sampler("video_clips", "").status().message().find("records are a sample each"),
            std::string::npos);
}

// A dataset of clips_per_video(3): a sample is clip `part` of the 3 clips its sampler takes,
// drawn from the sample's own stream; num_clips as given must be 1.
TEST(ClipSampler, ClipsPerVideoSamplesAreOneClipEachOfTheSamplersClips) {
  const auto sampler = [&](const std::string& name, int64_t clips) {
    const Params p = bind_params("decode_clip", clip_sampler_params(),
                                 {{"sampler", name},
                                  {"num_clips", clips},
                                  {"num_frames_per_clip", int64_t{4}},
                                  {"num_indices_between_frames", int64_t{5}}})
                         .value_or_throw();
    return clip_sampler_from(p, "clips_per_video(3)");
  };
  VideoIndex index;  // 75 frames at 25 fps
  index.time_base_num = 1;
  index.time_base_den = 25;
  for (int64_t i = 0; i < 75; ++i) index.pts.push_back(i);
  index.end_pts = 75;
  for (const char* name : {"random", "regular", "uniform_clips"}) {
    const ClipSampler one = sampler(name, 1).value_or_throw();
    EXPECT_EQ(one.of_video, 3);
    ClipSampler all = one;
    all.num_clips = 3;
    all.of_video = 0;
    CounterRng draws(1, 7);
    const std::vector<int64_t> clips =
        clip_frame_indices(all, index, draws, "v.mp4").value_or_throw();
    for (int64_t part = 0; part < 3; ++part) {
      CounterRng rng(1, 7);
      EXPECT_EQ(clip_frame_indices(one, index, rng, "v.mp4", part).value_or_throw(),
                std::vector<int64_t>(clips.begin() + part * 4, clips.begin() + part * 4 + 4))
          << name << " clip " << part;
    }
  }
  // uniform_clips: UniformClipSampler's clips 0, 5, 11 of the 12 clips of every 5th frame.
  CounterRng rng(1, 7);
  EXPECT_EQ(clip_frame_indices(sampler("uniform_clips", 1).value_or_throw(), index, rng, "v.mp4", 1)
                .value_or_throw(),
            (std::vector<int64_t>{25, 30, 35, 40}));
  EXPECT_EQ(sampler("random", 2).status().message(),
            "this dataset's samples are clips_per_video(3) of each video, one clip each: "
            "num_clips must be 1");
}

}  // namespace
}  // namespace stoker::video
