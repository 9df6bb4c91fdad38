#pragma once
// Decoded frames to packed RGB24, exactly as torchcodec 0.17's CPU path converts them with the
// same FFmpeg, so that the bytes are equal: a frame whose width is a multiple of 32 goes through
// one swscale context to RGB24 at the same size (no scaler flags, the frame's own colour space's
// coefficients for input and output, swscale's default ranges); any other width through a
// filtergraph buffer -> copy -> buffersink(rgb24), whose automatically inserted scale filter does
// the conversion. Contexts are kept while the frames' size, format and colour space stay the same.
// One thread at a time.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "stoker/util/status.h"
#include "stoker/video/ffmpeg_handles.h"

namespace stoker::video {

class RgbConverter {
 public:
  // `time_base`: the stream's, which the filtergraph's source is given.
  RgbConverter(std::string path, AVRational time_base)
      : path_(std::move(path)), time_base_(time_base) {}

  // Writes `frame` as frame.height rows of frame.width * 3 bytes, `stride` bytes apart, at `out`.
  Status convert(const AVFrame& frame, uint8_t* out, ptrdiff_t stride);

 private:
  Status convert_swscale(const AVFrame& frame, uint8_t* out, ptrdiff_t stride);
  Status convert_filtergraph(const AVFrame& frame, uint8_t* out, ptrdiff_t stride);
  Status build_filtergraph(const AVFrame& frame);

  struct Shape {
    int width = 0, height = 0, format = -1, colorspace = -1;
    AVRational aspect{0, 1};
    bool operator==(const Shape& o) const {
      return width == o.width && height == o.height && format == o.format &&
             colorspace == o.colorspace && aspect.num == o.aspect.num && aspect.den == o.aspect.den;
    }
  };

  std::string path_;
  AVRational time_base_;
  SwsContextPtr sws_;
  Shape sws_shape_;
  FilterGraphPtr graph_;
  AVFilterContext* source_ = nullptr;  // owned by graph_
  AVFilterContext* sink_ = nullptr;    // owned by graph_
  Shape graph_shape_;
  FramePtr filtered_;
};

}  // namespace stoker::video
