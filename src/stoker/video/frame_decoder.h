#pragma once
// Frames of a video file at given indices (presentation order, as its VideoIndex counts them),
// decoded and converted to RGB24 as torchcodec 0.17 converts them (rgb_converter.h). The
// requested frames are grouped by the keyframe at or before each; every group seeks once to its
// keyframe and decodes forward to its last requested frame, so a GOP is decoded once however many
// of its frames are asked for, in whatever order or repetition; the frames between that nothing
// refers to (non-reference B-frames) are skipped undecoded, and once a group's last asked frame
// has been given to the decoder it is drained, not given more. Frames come out upright (the
// index's quarter turns applied, as torchcodec applies them). A file that ends early, a frame
// that does not decode, an index out of range: a one-line error naming the file and the frame;
// never a crash or a hang. One thread at a time per VideoFrameDecoder.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/util/status.h"
#include "stoker/video/rgb_converter.h"
#include "stoker/video/video_file.h"
#include "stoker/video/video_index.h"

namespace stoker::video {

// How a batch of frames lies in memory: [N, H, W, 3] or [N, 3, H, W], uint8.
enum class FrameLayout { kNHWC, kNCHW };

class VideoFrameDecoder {
 public:
  // Opens the file that `index` was read from (keeping a copy of the index), with a decoder on
  // `threads` threads (0: FFmpeg chooses).
  static Result<VideoFrameDecoder> open(const VideoIndex& index, int threads = 1);
  // Decodes `file` (open, of which `index` was read), on `threads` threads.
  static Result<VideoFrameDecoder> open(VideoFile file, const VideoIndex& index, int threads = 1);

  // Decodes the frames at `indices` into `out` (resized to N * H * W * 3 bytes) in `layout`.
  Status decode(const std::vector<int64_t>& indices, FrameLayout layout, std::vector<uint8_t>& out);

  // Decodes the frames at `indices` and calls `take(rgb, stride, slots)` once per distinct
  // frame, in frame order: `rgb` the upright frame as upright_height() rows of upright_width() *
  // 3 bytes, `stride` bytes apart (valid during the call), `slots` the positions in `indices`
  // that ask for it. A Status from `take` ends the decode.
  using FrameTaker =
      std::function<Status(const uint8_t* rgb, ptrdiff_t stride, const std::vector<size_t>& slots)>;
  Status decode_each(const std::vector<int64_t>& indices, const FrameTaker& take);

  const VideoIndex& index() const { return index_; }

  // Frames decoded since opening, requested or not (the cost of seeking to keyframes): the
  // pictures the decoder made, whether they came out or not (those it still held when a decode
  // ended, those it dropped), counted as FFmpeg gives it their buffers; the skipped frames not
  // among them. A decoder that keeps its own buffers (libdav1d's AV1) counts the frames that
  // came out.
  int64_t frames_decoded() const;

 private:
  VideoFrameDecoder(const VideoIndex& index, VideoFile file, CodecContextPtr codec);
  // Seeks to keyframe `key` and decodes until frame `last` has come out, calling `take(i, frame)`
  // for every frame i in [key, last] that does; the caller checks that its frames all came.
  template <typename Take>
  Status decode_run(int64_t key, int64_t last, Take&& take);
  Status frame_error(int64_t frame, const std::string& what) const;
  // The frame of presentation time `pts`, or -1 for one the index does not know (asked for,
  // for all the decoder knows).
  int64_t frame_at(int64_t pts) const;

  VideoIndex index_;
  VideoFile file_;
  // The pictures given buffers (by the decoder's threads too), where it takes them from FFmpeg;
  // freed after the decoder.
  std::unique_ptr<std::atomic<int64_t>> pictures_;
  CodecContextPtr codec_;
  RgbConverter converter_;
  PacketPtr packet_;
  FramePtr frame_;
  std::vector<uint8_t> rgb_;      // a frame converted, at the coded size
  std::vector<uint8_t> upright_;  // rgb_ turned upright, where the index has a rotation
  std::vector<uint8_t> asked_;    // per frame: asked for by the current decode_each
  int64_t frames_out_ = 0;        // the frames that came out
};

// One-shot: reads nothing but the decode itself (the index is the caller's).
Status decode_frames_at(const VideoIndex& index, const std::vector<int64_t>& indices,
                        FrameLayout layout, std::vector<uint8_t>& out);

}  // namespace stoker::video
