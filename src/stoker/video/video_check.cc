#include "stoker/video/video_check.h"

#include "stoker/video/frame_decoder.h"
#include "stoker/video/video_file.h"
#include "stoker/video/video_index.h"
#include "stoker/video/video_reference.h"

extern "C" {
#include <libavformat/avformat.h>
}

#include <fmt/format.h>

namespace stoker::video {
namespace {

// The seconds the container declares its video lasts: the video stream's duration, else the
// container's where the video is its only stream (another stream may outlast the video); 0
// where it declares none.
double declared_seconds(const VideoFile& file) {
  const AVStream* stream = file.stream();
  if (stream->duration > 0)
    return static_cast<double>(stream->duration) * av_q2d(stream->time_base);
  if (file.format->nb_streams == 1 && file.format->duration > 0)
    return static_cast<double>(file.format->duration) / AV_TIME_BASE;
  return 0;
}

}  // namespace

Result<VideoFacts> examine_video(const std::string& name, ByteSpan bytes, VideoDecode decode,
                                 int64_t max_pixels) {
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<VideoBytes> read, video_field_bytes(name, bytes));
  STOKER_ASSIGN_OR_RETURN(VideoFile file, open_video_bytes(std::move(read)));
  STOKER_ASSIGN_OR_RETURN(VideoIndex index, read_video_index(file));
  VideoFacts facts;
  facts.codec = index.codec;
  facts.width = index.upright_width();
  facts.height = index.upright_height();
  facts.frames = index.frame_count();
  if (max_pixels > 0) {
    const Status size = check_frame_pixels(index.width, index.height, max_pixels);
    if (!size.is_ok()) return Status(size.code(), video_named(name) + ": " + size.message());
  }
  std::vector<int64_t> decoded;
  for (int64_t i = 0; i < index.frame_count(); ++i) {
    const bool key = index.keyframe[static_cast<size_t>(i)] != 0;
    facts.keyframes += key;
    if (decode == VideoDecode::kAllFrames || (decode == VideoDecode::kKeyframes && key))
      decoded.push_back(i);
  }
  facts.fps = index.average_fps();
  facts.seconds = index.end_seconds() - index.begin_seconds();
  // A file cut short whose container still declares its whole length (Matroska, WebM): its
  // packets end early without an error.
  const double declared = declared_seconds(file);
  if (facts.fps > 0 && index.end_seconds() + 2 / facts.fps < declared)
    return corrupt(
        fmt::format("{}: its frames end at {:.2f} s of the {:.2f} s its container "
                    "declares (the file is cut short)",
                    video_named(name), index.end_seconds(), declared));
  if (decoded.empty()) return facts;
  // The index was read to the file's end: the decoder seeks back to each frame's keyframe.
  STOKER_ASSIGN_OR_RETURN(VideoFrameDecoder decoder,
                          VideoFrameDecoder::open(std::move(file), index, /*threads=*/1));
  STOKER_RETURN_IF_ERROR(decoder.decode_each(
      decoded, [](const uint8_t*, ptrdiff_t, const std::vector<size_t>&) { return Status::ok(); }));
  return facts;
}

}  // namespace stoker::video
