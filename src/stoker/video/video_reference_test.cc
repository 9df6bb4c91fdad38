#include "stoker/video/video_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "stoker/testing/video_set.h"
#include "stoker/video/frame_decoder.h"
#include "stoker/video/video_cache.h"

namespace stoker::video {
namespace {

VideoReference reference_to(const std::string& source, const std::string& name, uint64_t size) {
  VideoReference reference;
  reference.source = source;
  reference.name = name;
  reference.url = "http://host/videos/" + name;
  reference.size = size;
  reference.etag = "\"e1\"";
  return reference;
}

TEST(VideoReference, IsSealedAndReadBack) {
  const VideoReference reference = reference_to("http://host/videos", "a/b.mp4", 12345);
  const std::string blob = encode_video_reference(reference);
  ASSERT_TRUE(is_video_reference(testing::span_of(blob)));
  const VideoReference back = decode_video_reference(testing::span_of(blob)).value_or_throw();
  EXPECT_EQ(back.source, reference.source);
  EXPECT_EQ(back.name, reference.name);
  EXPECT_EQ(back.url, reference.url);
  EXPECT_EQ(back.size, reference.size);
  EXPECT_EQ(back.etag, reference.etag);
  std::string damaged = blob;
  damaged.back() ^= 1;
  EXPECT_EQ(decode_video_reference(testing::span_of(damaged)).status().code(),
            StatusCode::kCorrupt);
  const std::string video = testing::video_bytes("h264_gop1.mp4");
  EXPECT_FALSE(is_video_reference(testing::span_of(video)));
  // No opener registered for its folder: one line naming its URL.
  const Result<std::unique_ptr<VideoBytes>> opened = open_video_reference(back);
  ASSERT_FALSE(opened.is_ok());
  EXPECT_EQ(opened.status().message(),
            "http://host/videos/a/b.mp4: a remote video whose folder was not opened here");
}

// A video's bytes in memory as an opener gives them: the bytes read counted, and a read past
// `fail_from` failing (a server erring mid-read).
struct Served {
  std::string bytes;
  uint64_t read = 0;
  uint64_t fail_from = UINT64_MAX;
};

class ServedBytes : public VideoBytes {
 public:
  explicit ServedBytes(Served& served) : served_(served) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return served_.bytes.size(); }
  Status read(uint64_t offset, uint8_t* out, size_t n) override {
    if (offset + n > served_.fail_from) return io_error("http://host/v: HTTP 503");
    served_.read += n;
    std::copy_n(served_.bytes.data() + offset, n, out);
    return Status::ok();
  }

 private:
  Served& served_;
  const std::string name_;
};

std::vector<uint8_t> frames_of(const std::string& field, const std::vector<int64_t>& frames,
                               Status& status) {
  std::vector<uint8_t> out;
  Result<IndexedVideo> opened = open_indexed_video(testing::span_of(field), "");
  if (!opened.is_ok()) {
    status = opened.status();
    return out;
  }
  Result<VideoFrameDecoder> decoder =
      VideoFrameDecoder::open(std::move(opened.value().file), *opened.value().index);
  status =
      decoder.is_ok() ? decoder.value().decode(frames, FrameLayout::kNHWC, out) : decoder.status();
  return out;
}

// A record holding a reference decodes through its opener to the frames of the video's bytes,
// in every container (an mp4 of H.264 indexed from its tables, the others from every packet);
// a read that fails once the index is kept (a server erring) is one line carrying the reader's
// error (test_remote_video_ranges.py: mid-clip, naming the frame).
TEST(VideoReference, ARecordsReferenceDecodesAsItsBytes) {
  for (const char* name :
       {"h264_gop12_bframes.mp4", "hevc_gop12_bframes.mp4", "h264_gop250_bframes.mkv",
        "vp9_gop12.webm", "mpeg4_gop12_bframes.avi"}) {
    SCOPED_TRACE(name);
    Served served{testing::video_bytes(name)};
    const std::string source = std::string("test://") + name;
    register_reference_opener(source, [&served](const VideoReference&) {
      return Result<std::unique_ptr<VideoBytes>>(std::make_unique<ServedBytes>(served));
    });
    const std::string field =
        encode_video_reference(reference_to(source, name, served.bytes.size()));
    const std::vector<int64_t> frames = {40, 2, 13};
    Status status;
    std::vector<uint8_t> want = frames_of(served.bytes, frames, status);
    ASSERT_TRUE(status.is_ok()) << status.message();
    EXPECT_EQ(frames_of(field, frames, status), want);
    ASSERT_TRUE(status.is_ok()) << status.message();
    // Opened again (its index kept), its reads fail (these videos are one block).
    served.fail_from = 0;
    frames_of(field, {40}, status);
    ASSERT_FALSE(status.is_ok());
    EXPECT_NE(status.message().find("http://host/v: HTTP 503"), std::string::npos)
        << status.message();
    EXPECT_EQ(status.message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace stoker::video
