#include "stoker/video/video_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "stoker/testing/temp_dir.h"
#include "stoker/testing/video_set.h"
#include "stoker/video/ffmpeg_handles.h"

namespace stoker::video {
namespace {

using testing::video_path;

int64_t keyframes(const VideoIndex& index) {
  int64_t n = 0;
  for (const uint8_t k : index.keyframe) n += k;
  return n;
}

TEST(VideoIndex, CountsFramesAndKeyframesByGop) {
  struct Case {
    const char* name;
    int64_t frames, keyframes;
    int width, height;
    const char* codec;
  };
  for (const Case& c : {Case{"h264_gop1.mp4", 50, 50, 128, 96, "h264"},
                        Case{"h264_gop12_bframes.mp4", 75, 7, 160, 120, "h264"},
                        Case{"h264_gop12_no_bframes.mp4", 75, 7, 160, 120, "h264"},
                        Case{"h264_gop250_bframes.mkv", 100, 1, 192, 108, "h264"},
                        Case{"mpeg4_gop12_bframes.avi", 75, 7, 160, 120, "mpeg4"},
                        Case{"mpeg4_gop250_no_bframes.avi", 75, 1, 128, 96, "mpeg4"},
                        Case{"vp9_odd_99x75.webm", 50, 2, 99, 75, "vp9"}}) {
    SCOPED_TRACE(c.name);
    Result<VideoIndex> index = read_video_index(video_path(c.name));
    ASSERT_TRUE(index.is_ok()) << index.status().message();
    EXPECT_EQ(index.value().frame_count(), c.frames);
    EXPECT_EQ(keyframes(index.value()), c.keyframes);
    EXPECT_EQ(index.value().width, c.width);
    EXPECT_EQ(index.value().height, c.height);
    EXPECT_EQ(index.value().codec, c.codec);
    EXPECT_EQ(index.value().keyframe[0], 1);
    EXPECT_FALSE(index.value().rotation.has_value());
    for (int64_t i = 1; i < index.value().frame_count(); ++i)
      ASSERT_LT(index.value().pts[i - 1], index.value().pts[i]) << "frame " << i;
  }
}

// torchcodec's metadata of the variable-frame-rate file (68 frames over 2.992 s) and the frame
// shown at a time: each frame from its own start until the next one's, the last until the end.
TEST(VideoIndex, TimesAndTheFrameShownAtEach) {
  Result<VideoIndex> read = read_video_index(video_path("h264_vfr.mkv"));
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  const VideoIndex& index = read.value();
  EXPECT_EQ(index.begin_seconds(), 0.0);
  EXPECT_EQ(index.end_seconds(), 2.992);
  EXPECT_EQ(index.average_fps(), 68 / 2.992);
  for (int64_t i = 0; i < index.frame_count(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(index.frame_played_at(index.seconds(i)), i);
    const double until = i + 1 < index.frame_count() ? index.seconds(i + 1) : index.end_seconds();
    EXPECT_EQ(index.frame_played_at(std::nextafter(until, 0.0)), i);
  }
  EXPECT_EQ(index.frame_played_at(-0.001), -1);
  EXPECT_EQ(index.frame_played_at(index.end_seconds()), -1);
}

TEST(VideoIndex, KeyframeAtOrBefore) {
  Result<VideoIndex> index = read_video_index(video_path("h264_gop12_no_bframes.mp4"));
  ASSERT_TRUE(index.is_ok()) << index.status().message();
  EXPECT_EQ(index.value().keyframe_at_or_before(0), 0);
  EXPECT_EQ(index.value().keyframe_at_or_before(11), 0);
  EXPECT_EQ(index.value().keyframe_at_or_before(12), 12);
  EXPECT_EQ(index.value().keyframe_at_or_before(74), 72);
}

TEST(VideoIndex, VariableFrameRateKeepsItsTimes) {
  Result<VideoIndex> index = read_video_index(video_path("h264_vfr.mkv"));
  ASSERT_TRUE(index.is_ok()) << index.status().message();
  const VideoIndex& v = index.value();
  // setpts gave gaps of 1.3, 1.3 and 0.4 frame periods (25 fps), and more every fifth frame.
  EXPECT_NEAR(v.seconds(1) - v.seconds(0), 1.3 / 25, 0.002);
  EXPECT_NEAR(v.seconds(3) - v.seconds(2), 0.4 / 25, 0.002);
  double smallest = 1, largest = 0;
  for (int64_t i = 1; i < v.frame_count(); ++i) {
    smallest = std::min(smallest, v.seconds(i) - v.seconds(i - 1));
    largest = std::max(largest, v.seconds(i) - v.seconds(i - 1));
  }
  EXPECT_GT(largest, 2 * smallest);
}

TEST(VideoIndex, ReadsRotation) {
  Result<VideoIndex> index = read_video_index(video_path("h264_rotated_90.mp4"));
  ASSERT_TRUE(index.is_ok()) << index.status().message();
  ASSERT_TRUE(index.value().rotation.has_value());
  EXPECT_DOUBLE_EQ(std::abs(*index.value().rotation), 90.0);
  EXPECT_EQ(index.value().width, 128);  // the coded size
}

TEST(VideoIndex, BadFilesAreOneLineErrorsNamingThem) {
  stoker::testing::TempDir dir;
  const std::string text = dir / "notes.mp4";
  std::ofstream(text) << "not a video at all\n";
  // A clip whose index (moov) is at its end, cut in half: no index to read.
  std::ifstream whole(video_path("h264_gop12_bframes.mp4"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(whole)), {});
  const std::string cut = dir / "cut.mp4";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const std::string empty = dir / "empty.mkv";
  std::ofstream(empty).flush();
  for (const std::string& path : {text, cut, empty, dir / "missing.webm"}) {
    Result<VideoIndex> index = read_video_index(path);
    ASSERT_FALSE(index.is_ok()) << path;
    EXPECT_NE(index.status().message().find(path), std::string::npos) << index.status().message();
    EXPECT_EQ(index.status().message().find('\n'), std::string::npos);
  }
}

// The FFmpeg linked in (scripts/build_ffmpeg.sh's) decodes the set's codecs and no others: a
// VP8 WebM, which Debian's ffmpeg encodes, is a one-line error naming the file and its codec.
TEST(VideoIndex, ACodecThisFFmpegLacksIsUnsupported) {
  if (avcodec_find_decoder(AV_CODEC_ID_VP8) != nullptr)
    GTEST_SKIP() << "this FFmpeg decodes VP8 (the system's, not scripts/build_ffmpeg.sh's)";
  stoker::testing::TempDir dir;
  const std::string path = dir / "vp8.webm";
  const std::string command =
      "ffmpeg -nostdin -loglevel error -f lavfi -i testsrc=size=64x48 "
      "-frames:v 5 -c:v libvpx " +
      path;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  Result<VideoIndex> index = read_video_index(path);
  ASSERT_FALSE(index.is_ok());
  EXPECT_EQ(index.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(index.status().message(),
            "video " + path + ": no decoder in this FFmpeg for its video codec vp8");
}

// Bytes in memory, counting those read.
class CountedBytes : public VideoBytes {
 public:
  explicit CountedBytes(ByteSpan bytes, uint64_t& read)
      : bytes_(memory_video_bytes("", bytes)), read_(read) {}
  const std::string& name() const override { return bytes_->name(); }
  uint64_t size() const override { return bytes_->size(); }
  Status read(uint64_t offset, uint8_t* out, size_t n) override {
    read_ += n;
    return bytes_->read(offset, out, n);
  }

 private:
  std::unique_ptr<VideoBytes> bytes_;
  uint64_t& read_;
};

// Every mp4 of the set (B-frames or not, GOP 1 and 12, an odd size, a rotation, a cut), and a
// longer one with its header first (faststart), indexed from the sample tables: the index of
// every packet read, exactly, with a small part of the file read. H.265's packets go through a
// parser (it may mark keyframes the tables do not), and other containers are not so indexed:
// none.
TEST(VideoIndex, AnMp4sSampleTablesGiveItsIndexExactly) {
  stoker::testing::TempDir dir;
  const std::string longer = dir / "longer.mp4";
  const std::string command =
      "ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=320x240:rate=25 -t 8 "
      "-c:v libx264 -g 12 -bf 3 -pix_fmt yuv420p -movflags +faststart " +
      longer;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<std::string> paths{longer};
  for (const auto& entry : std::filesystem::directory_iterator(testing::video_set()))
    paths.push_back(entry.path().string());
  int mp4s = 0;
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    std::ifstream in(path, std::ios::binary);
    const std::string bytes(std::istreambuf_iterator<char>(in), {});
    const VideoIndex full = read_video_index(path).value_or_throw();
    uint64_t read = 0;
    VideoFile file = open_video_bytes(std::make_unique<CountedBytes>(testing::span_of(bytes), read))
                         .value_or_throw();
    const std::optional<VideoIndex> tables = read_video_index_from_tables(file);
    if (std::filesystem::path(path).extension() != ".mp4" || full.codec == "hevc") {
      EXPECT_FALSE(tables.has_value());
      continue;
    }
    ++mp4s;
    ASSERT_TRUE(tables.has_value());
    EXPECT_EQ(tables->codec, full.codec);
    EXPECT_EQ(tables->time_base_num, full.time_base_num);
    EXPECT_EQ(tables->time_base_den, full.time_base_den);
    EXPECT_EQ(tables->width, full.width);
    EXPECT_EQ(tables->height, full.height);
    EXPECT_EQ(tables->rotation, full.rotation);
    EXPECT_EQ(tables->pts, full.pts);
    EXPECT_EQ(tables->keyframe, full.keyframe);
    EXPECT_EQ(tables->end_pts, full.end_pts);
    if (path == longer) {
      EXPECT_LT(read, bytes.size() / 4) << "of " << bytes.size();
    }
  }
  EXPECT_EQ(mp4s, 7);
}

}  // namespace
}  // namespace stoker::video
