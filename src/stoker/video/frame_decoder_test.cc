#include "stoker/video/frame_decoder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "stoker/testing/temp_dir.h"
#include "stoker/testing/video_set.h"

namespace stoker::video {
namespace {

using testing::video_path;

VideoIndex index_of(const std::string& name) {
  Result<VideoIndex> index = read_video_index(video_path(name));
  EXPECT_TRUE(index.is_ok()) << index.status().message();
  return index.is_ok() ? std::move(index).value() : VideoIndex{};
}

std::vector<uint8_t> decoded(const VideoIndex& index, const std::vector<int64_t>& frames,
                             FrameLayout layout = FrameLayout::kNHWC) {
  std::vector<uint8_t> out;
  const Status status = decode_frames_at(index, frames, layout, out);
  EXPECT_TRUE(status.is_ok()) << status.message();
  return out;
}

const char* const kVideos[] = {"h264_gop1.mp4",
                               "h264_gop12_bframes.mp4",
                               "h264_gop12_no_bframes.mp4",
                               "h264_gop250_bframes.mkv",
                               "h264_odd_98x74.mp4",
                               "h264_vfr.mkv",
                               "h264_cut.mp4",
                               "vp9_gop12.webm",
                               "vp9_odd_99x75.webm",
                               "mpeg4_gop250_no_bframes.avi",
                               "mpeg4_gop12_bframes.avi"};

// Any frame, asked for alone, in any order or twice, is the frame of one decode of them all.
TEST(VideoFrameDecoder, FramesAreTheSameHoweverTheyAreAskedFor) {
  for (const char* name : kVideos) {
    SCOPED_TRACE(name);
    const VideoIndex index = index_of(name);
    const int64_t n = index.frame_count();
    ASSERT_GT(n, 0);
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
    const std::vector<uint8_t> every = decoded(index, all);
    const size_t frame = static_cast<size_t>(index.width) * index.height * 3;
    ASSERT_EQ(every.size(), frame * static_cast<size_t>(n));
    std::mt19937 rng(7);
    std::vector<int64_t> some = {n - 1, 0, n / 2, n / 2, 13 % n};
    for (int k = 0; k < 5; ++k)
      some.push_back(std::uniform_int_distribution<int64_t>(0, n - 1)(rng));
    const std::vector<uint8_t> picked = decoded(index, some);
    for (size_t s = 0; s < some.size(); ++s)
      ASSERT_EQ(0, std::memcmp(picked.data() + s * frame,
                               every.data() + static_cast<size_t>(some[s]) * frame, frame))
          << "frame " << some[s];
    // Frames differ from each other: the motion is there.
    EXPECT_NE(0, std::memcmp(every.data(), every.data() + (n - 1) * frame, frame));
  }
}

TEST(VideoFrameDecoder, ChannelsFirstIsTheTransposeOfChannelsLast) {
  const VideoIndex index = index_of("vp9_odd_99x75.webm");
  const std::vector<uint8_t> hwc = decoded(index, {3, 40}, FrameLayout::kNHWC);
  const std::vector<uint8_t> chw = decoded(index, {3, 40}, FrameLayout::kNCHW);
  ASSERT_EQ(hwc.size(), chw.size());
  const size_t plane = 99 * 75;
  for (size_t f = 0; f < 2; ++f)
    for (size_t p = 0; p < plane; ++p)
      for (size_t c = 0; c < 3; ++c)
        ASSERT_EQ(hwc[f * plane * 3 + p * 3 + c], chw[f * plane * 3 + c * plane + p]);
}

// Frames of one GOP decode once, from its keyframe to the last one asked for.
TEST(VideoFrameDecoder, DecodesEachGopOnceFromItsKeyframe) {
  const VideoIndex index = index_of("h264_gop12_no_bframes.mp4");
  Result<VideoFrameDecoder> decoder = VideoFrameDecoder::open(index);
  ASSERT_TRUE(decoder.is_ok()) << decoder.status().message();
  std::vector<uint8_t> out;
  ASSERT_TRUE(decoder.value().decode({20, 14, 13, 20}, FrameLayout::kNHWC, out).is_ok());
  EXPECT_EQ(decoder.value().frames_decoded(), 9);  // frames 12 to 20
  ASSERT_TRUE(decoder.value().decode({1, 73}, FrameLayout::kNHWC, out).is_ok());
  EXPECT_EQ(decoder.value().frames_decoded(), 9 + 2 + 2);  // 0..1 and 72..73
}

// Non-reference B-frames that nothing asks for are skipped: fewer frames decoded than the run's,
// the frames asked for the same as those of a decode of every frame.
TEST(VideoFrameDecoder, SkipsNonReferenceFramesNothingAsksFor) {
  const VideoIndex index = index_of("h264_gop12_bframes.mp4");
  Result<VideoFrameDecoder> decoder = VideoFrameDecoder::open(index);
  ASSERT_TRUE(decoder.is_ok()) << decoder.status().message();
  std::vector<uint8_t> out;
  ASSERT_TRUE(decoder.value().decode({10, 2}, FrameLayout::kNHWC, out).is_ok());
  EXPECT_LT(decoder.value().frames_decoded(), 11);  // frames 0 to 10, less the skipped
  EXPECT_GE(decoder.value().frames_decoded(), 2);
  std::vector<int64_t> all(12);
  for (int64_t i = 0; i < 12; ++i) all[static_cast<size_t>(i)] = i;
  const std::vector<uint8_t> every = decoded(index, all);
  const size_t frame = static_cast<size_t>(index.width) * index.height * 3;
  EXPECT_EQ(0, std::memcmp(out.data(), every.data() + 10 * frame, frame));
  EXPECT_EQ(0, std::memcmp(out.data() + frame, every.data() + 2 * frame, frame));
}

// The frames decoded, against the GOPs of h264_gop12_bframes.mp4 (x264's, B-pyramid; its
// slices' nal_ref_idc read by ffmpeg's trace_headers). In decoding order, non-reference frames
// lower case: I0 P2 b1 P4 b3 P7 B5 b6 P10 B8 b9 P11 | I12 P16 B14 b13 b15 P20 ... A decode sends
// the packets from the keyframe to the last one asked for and decodes the reference frames
// among them and the frames asked for (the rest skipped); a frame asked for comes out while
// the decoder still holds reference frames decoded after it (reordered after it): decoded,
// so counted, though they never come out.
TEST(VideoFrameDecoder, CountsTheFramesTheDecoderDecodesThoseHeldToo) {
  const VideoIndex index = index_of("h264_gop12_bframes.mp4");
  for (int64_t i = 0; i < 24; ++i) ASSERT_EQ(index.keyframe[i] == 1, i % 12 == 0) << i;
  const auto decoded_for = [&](const std::vector<int64_t>& frames, int threads) {
    Result<VideoFrameDecoder> decoder = VideoFrameDecoder::open(index, threads);
    EXPECT_TRUE(decoder.is_ok()) << decoder.status().message();
    std::vector<uint8_t> out;
    EXPECT_TRUE(decoder.value().decode(frames, FrameLayout::kNHWC, out).is_ok());
    return decoder.value().frames_decoded();
  };
  EXPECT_EQ(decoded_for({2}, 1), 2);             // I0 P2, drained
  EXPECT_EQ(decoded_for({1}, 1), 3);             // I0 P2 b1: P2 held
  EXPECT_EQ(decoded_for({6}, 1), 6);             // I0 P2 P4 P7 B5 b6: P7 held
  EXPECT_EQ(decoded_for({13}, 1), 4);            // I12 P16 B14 b13: P16 and B14 held
  EXPECT_EQ(decoded_for({13, 6, 1}, 1), 7 + 4);  // I0 P2 b1 P4 P7 B5 b6, then I12 P16 B14 b13
  // A decoder's threads take their pictures' buffers through the same count.
  EXPECT_GE(decoded_for({6}, 2), 6);
}

// A rotated stream's frames come out turned upright: 90 degrees counter-clockwise, so the
// coded frame's last column is the upright frame's first row.
TEST(VideoFrameDecoder, RotatedFramesComeOutUpright) {
  VideoIndex index = index_of("h264_rotated_90.mp4");
  ASSERT_EQ(index.quarter_turns(), 1);
  const std::vector<uint8_t> upright = decoded(index, {3});
  index.rotation.reset();
  const std::vector<uint8_t> coded = decoded(index, {3});
  const int w = index.width, h = index.height;  // coded; upright is h wide, w tall
  ASSERT_EQ(upright.size(), coded.size());
  for (int y = 0; y < w; ++y)
    for (int x = 0; x < h; ++x)
      ASSERT_EQ(0, std::memcmp(&upright[(static_cast<size_t>(y) * h + x) * 3],
                               &coded[(static_cast<size_t>(x) * w + (w - 1 - y)) * 3], 3))
          << y << "," << x;
  index.rotation = -90.0;
  EXPECT_EQ(index.quarter_turns(), 3);
  index.rotation = 179.0;
  EXPECT_EQ(index.quarter_turns(), 2);
}

TEST(VideoFrameDecoder, IndexOutOfRangeNamesTheFileAndFrame) {
  const VideoIndex index = index_of("h264_gop1.mp4");
  for (const int64_t bad : {int64_t{50}, int64_t{-1}}) {
    std::vector<uint8_t> out;
    const Status status = decode_frames_at(index, {0, bad}, FrameLayout::kNHWC, out);
    ASSERT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(index.path), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("frame " + std::to_string(bad)), std::string::npos)
        << status.message();
  }
}

// A file cut short after its index was read: the frames past the cut are an error naming the
// file and the frame; the frames before it still decode.
TEST(VideoFrameDecoder, FileCutShortIsAnErrorNamingTheFrame) {
  stoker::testing::TempDir dir;
  const std::string copy = dir / "cut.mkv";
  std::filesystem::copy_file(video_path("h264_gop250_bframes.mkv"), copy);
  Result<VideoIndex> index = read_video_index(copy);
  ASSERT_TRUE(index.is_ok()) << index.status().message();
  std::filesystem::resize_file(copy, std::filesystem::file_size(copy) / 2);
  std::vector<uint8_t> out;
  EXPECT_TRUE(decode_frames_at(index.value(), {0, 5}, FrameLayout::kNHWC, out).is_ok());
  const Status status = decode_frames_at(index.value(), {0, 99}, FrameLayout::kNHWC, out);
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find(copy), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("frame 99"), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos);
  std::filesystem::resize_file(copy, 0);
  EXPECT_FALSE(decode_frames_at(index.value(), {0}, FrameLayout::kNHWC, out).is_ok());
}

// Every frame of `name` as FFmpeg gives them decoding the whole file in order (ffmpeg -i name
// -f rawvideo): N frames of width * height * 3 bytes.
std::vector<uint8_t> decoded_in_order(const std::string& name) {
  Result<VideoFile> file = open_video_file(video_path(name));
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return {};
  Result<CodecContextPtr> codec = open_video_decoder(file.value(), 1);
  EXPECT_TRUE(codec.is_ok()) << codec.status().message();
  if (!codec.is_ok()) return {};
  const AVStream* stream = file.value().stream();
  const int width = stream->codecpar->width, height = stream->codecpar->height;
  RgbConverter converter(name, stream->time_base);
  PacketPtr packet(av_packet_alloc());
  FramePtr frame(av_frame_alloc());
  std::vector<uint8_t> out, rgb(static_cast<size_t>(width) * height * 3);
  for (bool more = true; more;) {
    more = av_read_frame(file.value().format.get(), packet.get()) >= 0;
    if (more && packet->stream_index != file.value().stream_index) {
      av_packet_unref(packet.get());
      continue;
    }
    EXPECT_GE(avcodec_send_packet(codec.value().get(), more ? packet.get() : nullptr), 0);
    av_packet_unref(packet.get());
    while (avcodec_receive_frame(codec.value().get(), frame.get()) >= 0) {
      Result<RgbRows> rows = converter.convert(*frame, rgb.data(), width * 3);
      EXPECT_TRUE(rows.is_ok()) << rows.status().message();
      for (int y = 0; rows.is_ok() && y < height; ++y)
        out.insert(out.end(), rows.value().data + y * rows.value().stride,
                   rows.value().data + y * rows.value().stride + width * 3);
      av_frame_unref(frame.get());
    }
  }
  return out;
}

// MPEG-4 part 2 with B-frames in AVI: its packets have decoding times only (a B-frame's is its
// presentation time; a reference frame's is not known). Every frame, asked for alone or with
// others, is FFmpeg's frame of that rank in a decode of the whole file; its keyframes are where
// they are shown (every 12th frame), not where they are decoded.
TEST(VideoFrameDecoder, AviWithBFramesDecodesAsFfmpegInOrder) {
  const char* name = "mpeg4_gop12_bframes.avi";
  const VideoIndex index = index_of(name);
  ASSERT_EQ(index.frame_count(), 75);
  for (int64_t i = 0; i < index.frame_count(); ++i)
    EXPECT_EQ(index.keyframe[static_cast<size_t>(i)], i % 12 == 0 ? 1 : 0) << "frame " << i;
  const std::vector<uint8_t> reference = decoded_in_order(name);
  const size_t frame = static_cast<size_t>(index.width) * index.height * 3;
  ASSERT_EQ(reference.size(), frame * 75);
  std::vector<int64_t> all(75);
  for (int64_t i = 0; i < 75; ++i) all[static_cast<size_t>(i)] = i;
  EXPECT_TRUE(decoded(index, all) == reference);
  for (const int64_t i : all) {
    const std::vector<uint8_t> one = decoded(index, {i});
    ASSERT_EQ(one.size(), frame);
    EXPECT_EQ(0, std::memcmp(one.data(), reference.data() + i * frame, frame)) << "frame " << i;
  }
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A video in memory (a record's bytes) has the file's index and frames; seeks back and forth.
TEST(VideoFrameDecoder, BytesInMemoryDecodeAsTheFile) {
  for (const char* name : kVideos) {
    SCOPED_TRACE(name);
    const VideoIndex on_disk = index_of(name);
    const std::vector<uint8_t> bytes = file_bytes(video_path(name));
    Result<VideoFile> file = open_video_bytes("memory", ByteSpan{bytes.data(), bytes.size()});
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    Result<VideoIndex> index = read_video_index(file.value());
    ASSERT_TRUE(index.is_ok()) << index.status().message();
    EXPECT_EQ(index.value().pts, on_disk.pts);
    EXPECT_EQ(index.value().keyframe, on_disk.keyframe);
    Result<VideoFrameDecoder> decoder =
        VideoFrameDecoder::open(std::move(file).value(), index.value());
    ASSERT_TRUE(decoder.is_ok()) << decoder.status().message();
    const int64_t n = on_disk.frame_count();
    const std::vector<int64_t> frames = {n - 1, 0, n / 2, 1};
    std::vector<uint8_t> ours;
    ASSERT_TRUE(decoder.value().decode(frames, FrameLayout::kNCHW, ours).is_ok());
    EXPECT_EQ(ours, decoded(on_disk, frames, FrameLayout::kNCHW));
  }
}

// Bytes that are no video, or a video cut short: one-line errors naming the video.
TEST(VideoFrameDecoder, BadBytesAreOneLineErrorsNamingTheVideo) {
  const std::vector<uint8_t> bytes = file_bytes(video_path("h264_gop12_bframes.mp4"));
  for (const size_t keep : {size_t{0}, size_t{100}, bytes.size() / 2}) {
    SCOPED_TRACE(keep);
    Result<VideoFile> file = open_video_bytes("sample 7", ByteSpan{bytes.data(), keep});
    Status status = file.status();
    if (file.is_ok()) status = read_video_index(file.value()).status();
    ASSERT_FALSE(status.is_ok());
    EXPECT_EQ(status.message().rfind("video sample 7: ", 0), 0u) << status.message();
    EXPECT_EQ(status.message().find('\n'), std::string::npos);
  }
  std::vector<uint8_t> noise(4096);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 131 + 7);
  EXPECT_FALSE(open_video_bytes("noise", ByteSpan{noise.data(), noise.size()}).is_ok());
}

}  // namespace
}  // namespace stoker::video
