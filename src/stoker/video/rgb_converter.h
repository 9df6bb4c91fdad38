#pragma once
// Decoded frames to packed RGB24, exactly as torchcodec 0.17's CPU path converts them with the
// same FFmpeg, so that the bytes are equal: a frame whose width is a multiple of 32 goes through
// one swscale context to RGB24 at the same size (no scaler flags, the frame's own colour space's
// coefficients for input and output, swscale's default ranges); any other width through a
// filtergraph buffer -> copy -> buffersink(rgb24), whose automatically inserted scale filter does
// the conversion: for the pixel formats checked to give the same bytes (YUV 4:2:0, 4:2:2, 4:4:4,
// 4:2:0 in 10 bits) by a swscale context made as that filter makes it, without the graph and
// its copies; for the others by the filtergraph itself. The contexts are kept per thread (not
// per converter: every decoder of a thread shares them) while the frames' size, format, colour
// space and time base stay the same; one that failed is made anew. Thread-safe (each thread
// converts with its own).

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "stoker/util/status.h"
#include "stoker/video/ffmpeg_handles.h"

namespace stoker::video {

// Rows of RGB24 pixels, `stride` bytes apart.
struct RgbRows {
  const uint8_t* data = nullptr;
  ptrdiff_t stride = 0;
};

class RgbConverter {
 public:
  // `time_base`: the stream's, which the filtergraph's source is given.
  RgbConverter(std::string path, AVRational time_base)
      : path_(std::move(path)), time_base_(time_base) {}

  // `frame` as frame.height rows of frame.width * 3 bytes: written at `out`, `stride` bytes
  // apart, or where the conversion has rows of its own, those (valid until the thread's next
  // conversion).
  Result<RgbRows> convert(const AVFrame& frame, uint8_t* out, ptrdiff_t stride);

 private:
  std::string path_;
  AVRational time_base_;
};

}  // namespace stoker::video
