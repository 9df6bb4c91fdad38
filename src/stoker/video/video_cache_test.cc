#include "stoker/video/video_cache.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "stoker/testing/video_set.h"
#include "stoker/video/frame_decoder.h"

namespace stoker::video {
namespace {

std::string bytes_of(const std::string& name) {
  std::ifstream in(testing::video_path(name), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ByteSpan span_of(const std::string& bytes) {
  return ByteSpan{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

std::vector<uint8_t> frames_of(IndexedVideo video, const std::vector<int64_t>& frames) {
  Result<VideoFrameDecoder> decoder = VideoFrameDecoder::open(std::move(video.file), *video.index);
  EXPECT_TRUE(decoder.is_ok()) << decoder.status().message();
  std::vector<uint8_t> out;
  if (decoder.is_ok()) {
    const Status status = decoder.value().decode(frames, FrameLayout::kNHWC, out);
    EXPECT_TRUE(status.is_ok()) << status.message();
  }
  return out;
}

// A video opened again is not indexed again (the thread's index is given), and decodes to the
// frames of its first opening and of a file's.
TEST(VideoCache, AVideoOpenedAgainKeepsItsIndexAndFrames) {
  for (const char* name : {"h264_gop12_bframes.mp4", "h264_gop250_bframes.mkv",
                           "vp9_odd_99x75.webm", "mpeg4_gop250_no_bframes.avi"}) {
    SCOPED_TRACE(name);
    const std::string bytes = bytes_of(name);
    Result<IndexedVideo> first = open_indexed_video(span_of(bytes));
    ASSERT_TRUE(first.is_ok()) << first.status().message();
    const std::string copy = bytes;  // the same bytes elsewhere: the same video
    Result<IndexedVideo> again = open_indexed_video(span_of(copy));
    ASSERT_TRUE(again.is_ok()) << again.status().message();
    EXPECT_EQ(again.value().index.get(), first.value().index.get());
    Result<std::shared_ptr<const VideoIndex>> index = indexed_video(span_of(copy));
    ASSERT_TRUE(index.is_ok());
    EXPECT_EQ(index.value().get(), first.value().index.get());

    const int64_t n = first.value().index->frame_count();
    const std::vector<int64_t> frames = {n - 1, 0, n / 2, 3 % n};
    Result<VideoIndex> read = read_video_index(testing::video_path(name));
    ASSERT_TRUE(read.is_ok());
    std::vector<uint8_t> want;
    ASSERT_TRUE(decode_frames_at(read.value(), frames, FrameLayout::kNHWC, want).is_ok());
    EXPECT_EQ(frames_of(std::move(first).value(), frames), want);
    EXPECT_EQ(frames_of(std::move(again).value(), frames), want);
  }
}

// Other bytes are another video: a changed one is indexed anew.
TEST(VideoCache, ChangedBytesAreAnotherVideo) {
  const std::string bytes = bytes_of("h264_gop12_bframes.mp4");
  Result<std::shared_ptr<const VideoIndex>> first = indexed_video(span_of(bytes));
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  const std::string longer = bytes + std::string(1, '\0');
  Result<std::shared_ptr<const VideoIndex>> other = indexed_video(span_of(longer));
  ASSERT_TRUE(other.is_ok()) << other.status().message();
  EXPECT_NE(other.value().get(), first.value().get());
  EXPECT_EQ(other.value()->pts, first.value()->pts);
}

// What does not open is not kept: it fails again, as the first time.
TEST(VideoCache, AVideoThatDoesNotOpenFailsEveryTime) {
  const std::string bytes = bytes_of("h264_gop12_bframes.mp4").substr(0, 200);
  for (int k = 0; k < 2; ++k) {
    Result<IndexedVideo> opened = open_indexed_video(span_of(bytes));
    ASSERT_FALSE(opened.is_ok());
    EXPECT_EQ(opened.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace stoker::video
