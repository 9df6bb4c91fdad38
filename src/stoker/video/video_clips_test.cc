#include "stoker/video/video_clips.h"

#include <gtest/gtest.h>

namespace stoker::video {
namespace {

VideoClips clips_of(int64_t frames, int64_t step, double rate = 0) {
  VideoClips c;
  c.frames_per_clip = frames;
  c.step_between_clips = step;
  c.frame_rate = rate;
  return c;
}

int64_t count(const VideoClips& c, int64_t n, double fps) {
  Result<int64_t> got = c.count(n, fps);
  EXPECT_TRUE(got.is_ok()) << got.status().message();
  return got.is_ok() ? got.value() : -1;
}

std::vector<int64_t> frames(const VideoClips& c, int64_t n, double fps, int64_t clip) {
  Result<std::vector<int64_t>> got = c.frames(n, fps, clip);
  EXPECT_TRUE(got.is_ok()) << got.status().message();
  return got.is_ok() ? got.value() : std::vector<int64_t>{};
}

// unfold(range(n), frames, step): (n - frames) / step + 1 windows, none for a short video.
TEST(VideoClips, EveryWindowOfTheVideosFrames) {
  EXPECT_EQ(count(clips_of(4, 1), 10, 25), 7);
  EXPECT_EQ(frames(clips_of(4, 1), 10, 25, 6), (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_EQ(count(clips_of(4, 3), 10, 25), 3);
  EXPECT_EQ(frames(clips_of(4, 3), 10, 25, 2), (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_EQ(count(clips_of(4, 1), 3, 25), 0);
  EXPECT_EQ(count(clips_of(4, 1), 4, 25), 1);
}

// A whole step (fps / frame_rate = 2): frames 0, 2, 4, ... (slice(None, None, 2)).
TEST(VideoClips, AWholeResamplingStepTakesEverySthFrame) {
  EXPECT_EQ(count(clips_of(2, 1, 12.5), 10, 25), 4);  // 5 frames: 0 2 4 6 8
  EXPECT_EQ(frames(clips_of(2, 1, 12.5), 10, 25, 3), (std::vector<int64_t>{6, 8}));
  EXPECT_EQ(count(clips_of(2, 1, 12.5), 9, 25), 4);  // ceil(9 / 2)
}

// Otherwise floor(float32(p) * float32(fps / frame_rate)) for p < floor(n * frame_rate / fps).
TEST(VideoClips, AFractionalStepFloorsFloat32Products) {
  EXPECT_EQ(count(clips_of(2, 1, 10), 10, 25), 3);  // 0 2 5 7
  EXPECT_EQ(frames(clips_of(2, 1, 10), 10, 25, 2), (std::vector<int64_t>{5, 7}));
  // Upsampled (step 0.5): frames repeat.
  EXPECT_EQ(count(clips_of(3, 2, 50), 10, 25), 9);
  EXPECT_EQ(frames(clips_of(3, 2, 50), 10, 25, 1), (std::vector<int64_t>{1, 1, 2}));
}

TEST(VideoClips, BadArgumentsAreOneLineNamingThem) {
  EXPECT_NE(clips_of(0, 1).check().message().find("frames_per_clip 0"), std::string::npos);
  EXPECT_NE(clips_of(1, 0).check().message().find("step_between_clips 0"), std::string::npos);
  EXPECT_NE(clips_of(1, 1, -2).check().message().find("frame_rate -2"), std::string::npos);
  EXPECT_FALSE(clips_of(4, 1).count(10, 0).is_ok());
  Result<std::vector<int64_t>> past = clips_of(4, 1).frames(10, 25, 7);
  ASSERT_FALSE(past.is_ok());
  EXPECT_NE(past.status().message().find("clip 7 is not one of its 7 clips"), std::string::npos);
}

TEST(VideoClips, TextRoundTrips) {
  for (const VideoClips& c : {clips_of(16, 1), clips_of(8, 3, 29.97), clips_of(1, 5, 1e-3)}) {
    const std::optional<VideoClips> back = VideoClips::from_text(c.text());
    ASSERT_TRUE(back.has_value()) << c.text();
    EXPECT_EQ(back->text(), c.text());
    EXPECT_EQ(back->frame_rate, c.frame_rate);
  }
  EXPECT_EQ(clips_of(16, 1).text(),
            "video_clips(frames_per_clip=16, step_between_clips=1, frame_rate=none)");
  EXPECT_FALSE(VideoClips::from_text("").has_value());
  EXPECT_FALSE(VideoClips::from_text("video_clips(frames_per_clip=0, step_between_clips=1, "
                                     "frame_rate=none)")
                   .has_value());
}

}  // namespace
}  // namespace stoker::video
