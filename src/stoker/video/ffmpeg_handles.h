#pragma once
// Owning handles of FFmpeg's objects (unique_ptr with FFmpeg's own free functions), and FFmpeg's
// error codes as text. Every video file's resources are freed on every path, errors included.

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavfilter/avfilter.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}

#include <memory>
#include <string>

namespace stoker::video {

struct FormatContextFree {
  void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
struct AvioContextFree {  // a custom I/O context and the buffer it was made with
  void operator()(AVIOContext* c) const {
    av_freep(&c->buffer);
    avio_context_free(&c);
  }
};
struct CodecContextFree {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameFree {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct CodecParametersFree {
  void operator()(AVCodecParameters* p) const { avcodec_parameters_free(&p); }
};
struct SwsContextFree {
  void operator()(SwsContext* c) const { sws_freeContext(c); }
};
struct FilterGraphFree {
  void operator()(AVFilterGraph* g) const { avfilter_graph_free(&g); }
};
struct FilterInOutFree {
  void operator()(AVFilterInOut* io) const { avfilter_inout_free(&io); }
};

using FormatContextPtr = std::unique_ptr<AVFormatContext, FormatContextFree>;
using AvioContextPtr = std::unique_ptr<AVIOContext, AvioContextFree>;
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextFree>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;
using FramePtr = std::unique_ptr<AVFrame, FrameFree>;
using CodecParametersPtr = std::unique_ptr<AVCodecParameters, CodecParametersFree>;
using SwsContextPtr = std::unique_ptr<SwsContext, SwsContextFree>;
using FilterGraphPtr = std::unique_ptr<AVFilterGraph, FilterGraphFree>;
using FilterInOutPtr = std::unique_ptr<AVFilterInOut, FilterInOutFree>;

// FFmpeg's message for an AVERROR code ("Invalid data found when processing input").
inline std::string av_error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  return text;
}

}  // namespace stoker::video
