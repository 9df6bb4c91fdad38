#pragma once
// What `stoker inspect` shows of a video and what `stoker verify` checks of it, behind a header
// without FFmpeg's: the facts its frame index gives (video_index.h: read from every packet,
// nothing decoded), and optionally a decode of its keyframes or of every frame. Decoding each
// keyframe decodes one frame per group of pictures (a keyframe is where every decode starts):
// it finds a stream that does not decode at all or whose groups are damaged at their start, at a
// fraction of a full decode's cost; every frame finds a damaged frame anywhere. Errors are one
// line naming the video and, for a decode, its frame. Also the size bound of a video's frames
// that DecodeClip applies (its max_pixels) and verify checks. Functions; thread-safe.

#include <cstdint>
#include <string>

#include "stoker/util/byte_span.h"
#include "stoker/util/enum_names.h"
#include "stoker/util/status.h"

namespace stoker::video {

struct VideoFacts {
  std::string codec;  // FFmpeg's decoder name: "h264", "vp9", "mpeg4"
  int width = 0;      // a frame's size once upright (rotation applied, as decoding does)
  int height = 0;
  int64_t frames = 0;
  int64_t keyframes = 0;
  double fps = 0;      // the average: frames over the stream's span
  double seconds = 0;  // the stream's span, its first frame's start to its end
};

// How much of a video is decoded.
enum class VideoDecode { kNone, kKeyframes, kAllFrames };
inline constexpr auto kVideoDecodeNames =
    enum_names<VideoDecode>({{VideoDecode::kNone, "none"},
                             {VideoDecode::kKeyframes, "keyframes"},
                             {VideoDecode::kAllFrames, "all"}});

// The most pixels (width x height) a frame may have unless DecodeClip's max_pixels says otherwise:
// above it the video is refused rather than decoded (a 16000x16000 frame takes 384 MB as RGB).
inline constexpr int64_t kDefaultMaxFramePixels = int64_t{1} << 25;

// kInvalidArgument "its WxH frames are above max_pixels N" for frames of more than `max_pixels`
// pixels, else ok: what DecodeClip refuses a video for, and verify reports.
inline Status check_frame_pixels(int width, int height, int64_t max_pixels) {
  if (int64_t{width} * height <= max_pixels) return Status::ok();
  return invalid_argument("its " + std::to_string(width) + "x" + std::to_string(height) +
                          " frames are above max_pixels " + std::to_string(max_pixels));
}

// Opens the video in `bytes` named `name` ("": "the video"; a reference's read by ranges,
// video_reference.h), reads its index and decodes what `decode` says. Frames above `max_pixels`
// (check_frame_pixels; 0: no bound) are an error found before any decode.
Result<VideoFacts> examine_video(const std::string& name, ByteSpan bytes, VideoDecode decode,
                                 int64_t max_pixels = 0);

}  // namespace stoker::video
