// Videos' indexes kept between runs: the saved form holds every field of the stream's parameters
// and of the index, and a copy that is damaged, cut short, of another version or of other bytes
// is refused; a fuzzed copy, resealed so that its checksum holds, is refused or whole, never a
// crash.
#include "stoker/video/saved_video_index.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <tuple>

#include "stoker/testing/video_set.h"

namespace stoker::video {
namespace {

// Every container and codec of the set, the rotated video and the AVI with B-frames.
const char* const kSavedVideos[] = {"h264_gop12_bframes.mp4", "h264_gop250_bframes.mkv",
                                    "vp9_odd_99x75.webm",     "hevc_gop12_bframes.mp4",
                                    "av1_gop12.mkv",          "mpeg4_gop12_bframes.avi",
                                    "h264_vfr.mkv",           "h264_rotated_90.mp4"};

// The parameters' every field but the extradata's pointer, as bytes.
std::string parameter_fields(const AVCodecParameters& p) {
  AVCodecParameters copy;
  std::memcpy(&copy, &p, sizeof copy);
  copy.extradata = nullptr;
  return std::string(reinterpret_cast<const char*>(&copy), sizeof copy);
}

std::string extradata(const AVCodecParameters& p) {
  return std::string(reinterpret_cast<const char*>(p.extradata),
                     p.extradata == nullptr ? 0 : static_cast<size_t>(p.extradata_size));
}

Result<KnownVideo> decode(const std::string& saved, const VideoKey& key) {
  return decode_known_video(testing::span_of(saved), key);
}

TEST(SavedVideoIndex, KeepsEveryFieldOfTheStreamAndTheIndex) {
  for (const char* name : kSavedVideos) {
    SCOPED_TRACE(name);
    const std::string bytes = testing::video_bytes(name);
    const KnownVideo known = testing::known_video_of(bytes);
    const VideoKey key = video_key(testing::span_of(bytes));
    const KnownVideo back = decode(encode_known_video(key, known), key).value_or_throw();
    EXPECT_EQ(back.stream.container, known.stream.container);
    EXPECT_EQ(back.stream.stream_index, known.stream.stream_index);
    EXPECT_EQ(parameter_fields(*back.stream.parameters),
              parameter_fields(*known.stream.parameters));
    EXPECT_EQ(extradata(*back.stream.parameters), extradata(*known.stream.parameters));
    const VideoIndex& a = back.index;
    const VideoIndex& b = known.index;
    EXPECT_EQ(a.codec, b.codec);
    EXPECT_EQ(std::tie(a.time_base_num, a.time_base_den, a.width, a.height, a.end_pts),
              std::tie(b.time_base_num, b.time_base_den, b.width, b.height, b.end_pts));
    EXPECT_EQ(a.rotation, b.rotation);
    EXPECT_EQ(a.pts, b.pts);
    EXPECT_EQ(a.keyframe, b.keyframe);
    EXPECT_EQ(a.rotation.has_value(), std::string(name) == "h264_rotated_90.mp4");
  }
}

TEST(SavedVideoIndex, RefusesWhatIsNotAWholeCopyOfItsKey) {
  const std::string bytes = testing::video_bytes("h264_gop12_bframes.mp4");
  const VideoKey key = video_key(testing::span_of(bytes));
  const std::string saved = encode_known_video(key, testing::known_video_of(bytes));
  ASSERT_TRUE(decode(saved, key).is_ok());
  const auto refused = [&](const std::string& copy, const VideoKey& as) {
    const Result<KnownVideo> back = decode(copy, as);
    if (back.is_ok()) return false;
    EXPECT_EQ(back.status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(back.status().message().find('\n'), std::string::npos);
    return true;
  };
  for (size_t n = 0; n < saved.size(); ++n) EXPECT_TRUE(refused(saved.substr(0, n), key)) << n;
  for (size_t i = 0; i < saved.size(); ++i) {
    std::string flipped = saved;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x10);
    EXPECT_TRUE(refused(flipped, key)) << i;
  }
  VideoKey other = key;
  other.size += 1;
  EXPECT_TRUE(refused(saved, other));
  other = key;
  other.hash.high ^= 1;
  EXPECT_TRUE(refused(saved, other));
  // Another version of the form (its magic's last byte: the one before), its checksum whole.
  std::string version = saved;
  version[7] = '1';
  EXPECT_TRUE(refused(version, key));
  EXPECT_NE(saved_video_file("/c", key), saved_video_file("/c", other));
  EXPECT_EQ(saved_video_file("/c", key).rfind("/c/video-indexes/", 0), 0u);
}

// `saved` with its body changed by `change`, and its checksum made whole again.
std::string resealed(const std::string& saved, const std::function<void(std::string&)>& change) {
  std::string body = saved.substr(16);
  change(body);
  const uint64_t checksum = xxh3_64(body.data(), body.size());
  return saved.substr(0, 8) + std::string(reinterpret_cast<const char*>(&checksum), 8) + body;
}

TEST(SavedVideoIndex, AFuzzedCopyIsRefusedOrWholeNeverACrash) {
  const std::string bytes = testing::video_bytes("h264_gop12_bframes.mp4");
  const VideoKey key = video_key(testing::span_of(bytes));
  const std::string saved = encode_known_video(key, testing::known_video_of(bytes));
  std::mt19937_64 draw(63);
  const int64_t extremes[] = {0, 1, -1, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 1 << 20};
  int accepted = 0;
  for (int k = 0; k < 3000; ++k) {
    const std::string copy = resealed(saved, [&](std::string& body) {
      switch (draw() % 3) {
        case 0:  // a byte anywhere
          body[draw() % body.size()] = static_cast<char>(draw());
          break;
        case 1: {  // a 64-bit value at a value's place, extreme
          const size_t at = 8 * (draw() % (body.size() / 8));
          const int64_t v = extremes[draw() % std::size(extremes)];
          std::memcpy(&body[at], &v, 8);
          break;
        }
        default:  // cut short
          body.resize(draw() % body.size());
      }
    });
    const Result<KnownVideo> back = decode(copy, key);
    if (!back.is_ok()) {
      EXPECT_EQ(back.status().code(), StatusCode::kCorrupt);
      continue;
    }
    ++accepted;  // whole: what an opening guarantees holds, and opening with it does not crash
    const VideoIndex& index = back.value().index;
    ASSERT_FALSE(index.pts.empty());
    EXPECT_EQ(index.keyframe[0], 1);
    for (size_t i = 1; i < index.pts.size(); ++i) ASSERT_LT(index.pts[i - 1], index.pts[i]);
    static_cast<void>(open_known_video_bytes("", testing::span_of(bytes), back.value().stream));
  }
  EXPECT_GT(accepted, 0) << "some changes (a pts, a bit rate) keep a copy whole";
  EXPECT_LT(accepted, 3000);
}

}  // namespace
}  // namespace stoker::video
