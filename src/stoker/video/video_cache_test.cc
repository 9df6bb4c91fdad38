#include "stoker/video/video_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <thread>

#include "stoker/testing/temp_dir.h"
#include "stoker/testing/video_set.h"
#include "stoker/util/atomic_file.h"
#include "stoker/video/frame_decoder.h"
#include "stoker/video/saved_video_index.h"

namespace stoker::video {
namespace {

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
    const std::string bytes = testing::video_bytes(name);
    Result<IndexedVideo> first = open_indexed_video(testing::span_of(bytes), "");
    ASSERT_TRUE(first.is_ok()) << first.status().message();
    const std::string copy = bytes;  // the same bytes elsewhere: the same video
    Result<IndexedVideo> again = open_indexed_video(testing::span_of(copy), "");
    ASSERT_TRUE(again.is_ok()) << again.status().message();
    EXPECT_EQ(again.value().index.get(), first.value().index.get());
    Result<std::shared_ptr<const VideoIndex>> index = indexed_video(testing::span_of(copy), "");
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
  const std::string bytes = testing::video_bytes("h264_gop12_bframes.mp4");
  Result<std::shared_ptr<const VideoIndex>> first = indexed_video(testing::span_of(bytes), "");
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  const std::string longer = bytes + std::string(1, '\0');
  Result<std::shared_ptr<const VideoIndex>> other = indexed_video(testing::span_of(longer), "");
  ASSERT_TRUE(other.is_ok()) << other.status().message();
  EXPECT_NE(other.value().get(), first.value().get());
  EXPECT_EQ(other.value()->pts, first.value()->pts);
}

// What does not open is not kept: it fails again, as the first time.
TEST(VideoCache, AVideoThatDoesNotOpenFailsEveryTime) {
  const std::string bytes = testing::video_bytes("h264_gop12_bframes.mp4").substr(0, 200);
  for (int k = 0; k < 2; ++k) {
    Result<IndexedVideo> opened = open_indexed_video(testing::span_of(bytes), "");
    ASSERT_FALSE(opened.is_ok());
    EXPECT_EQ(opened.status().message().find('\n'), std::string::npos);
  }
}

// `f()` on a thread of its own: its cache is empty, as a later run's is.
template <typename F>
auto on_new_thread(F f) {
  std::optional<decltype(f())> out;
  std::thread([&] { out.emplace(f()); }).join();
  return std::move(*out);
}

// The frames `frames` of `name` as decoding the file with its index read from it gives them.
std::vector<uint8_t> file_frames(const std::string& name, const std::vector<int64_t>& frames) {
  std::vector<uint8_t> want;
  const VideoIndex index = read_video_index(testing::video_path(name)).value_or_throw();
  EXPECT_TRUE(decode_frames_at(index, frames, FrameLayout::kNHWC, want).is_ok());
  return want;
}

// A video's first opening writes its index to the cache folder; a later run (a thread whose own
// cache is empty) reads it there instead of the video, and decodes the frames of the file.
TEST(VideoCache, ALaterRunReadsTheSavedIndexAndDecodesTheSameFrames) {
  stoker::testing::TempDir cache;
  for (const char* name :
       {"h264_gop12_bframes.mp4", "h264_gop250_bframes.mkv", "vp9_odd_99x75.webm",
        "mpeg4_gop250_no_bframes.avi", "h264_rotated_90.mp4", "av1_gop12.mkv"}) {
    SCOPED_TRACE(name);
    const std::string bytes = testing::video_bytes(name);
    const VideoKey key = video_key(testing::span_of(bytes));
    const std::string saved = saved_video_file(cache.path(), key);
    ASSERT_TRUE(on_new_thread([&] {
                  return open_indexed_video(testing::span_of(bytes), cache.path());
                }).is_ok());
    ASSERT_TRUE(std::filesystem::exists(saved));

    // Marked (its end moved), the saved copy is what a later run reads.
    KnownVideo marked = decode_known_video(testing::span_of(read_file(saved).value_or_throw()), key)
                            .value_or_throw();
    const int64_t end = marked.index.end_pts;
    marked.index.end_pts += 1;
    ASSERT_TRUE(write_file_atomically(saved, encode_known_video(key, marked)).is_ok());
    Result<IndexedVideo> later =
        on_new_thread([&] { return open_indexed_video(testing::span_of(bytes), cache.path()); });
    ASSERT_TRUE(later.is_ok()) << later.status().message();
    EXPECT_EQ(later.value().index->end_pts, end + 1);
    const int64_t n = later.value().index->frame_count();
    const std::vector<int64_t> frames = {n - 1, 0, n / 2, 3 % n};
    EXPECT_EQ(frames_of(std::move(later).value(), frames), file_frames(name, frames));
  }
}

// A saved copy that is damaged, or that the video does not open as (another stream), is not
// trusted: the video is indexed again, and the copy replaced.
TEST(VideoCache, ADamagedSavedIndexIsBuiltAgainAndReplaced) {
  stoker::testing::TempDir cache;
  const char* name = "h264_gop12_bframes.mp4";
  const std::string bytes = testing::video_bytes(name);
  const VideoKey key = video_key(testing::span_of(bytes));
  const std::string saved = saved_video_file(cache.path(), key);
  ASSERT_TRUE(
      on_new_thread([&] { return indexed_video(testing::span_of(bytes), cache.path()); }).is_ok());
  const std::string whole = read_file(saved).value_or_throw();
  KnownVideo other = decode_known_video(testing::span_of(whole), key).value_or_throw();
  other.stream.stream_index = 7;
  std::string flipped = whole;
  flipped[whole.size() / 2] ^= 0x20;
  for (const std::string& damaged : {std::string("garbage"), whole.substr(0, whole.size() - 3),
                                     flipped, encode_known_video(key, other)}) {
    ASSERT_TRUE(write_file_atomically(saved, damaged).is_ok());
    Result<IndexedVideo> opened =
        on_new_thread([&] { return open_indexed_video(testing::span_of(bytes), cache.path()); });
    ASSERT_TRUE(opened.is_ok()) << opened.status().message();
    const std::vector<int64_t> frames = {0, 13, 30};
    EXPECT_EQ(frames_of(std::move(opened).value(), frames), file_frames(name, frames));
    EXPECT_EQ(read_file(saved).value_or_throw(), whole);
  }
}

}  // namespace
}  // namespace stoker::video
