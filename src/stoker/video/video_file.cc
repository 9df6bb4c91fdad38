#include "stoker/video/video_file.h"

#include <mutex>

namespace stoker::video {

Result<VideoFile> open_video_file(const std::string& path) {
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_QUIET); });
  VideoFile file;
  file.path = path;
  AVFormatContext* format = nullptr;
  int rc = avformat_open_input(&format, path.c_str(), nullptr, nullptr);
  if (rc < 0) {
    const std::string why = av_error_text(rc);
    if (rc == AVERROR(ENOENT)) return not_found("video " + path + ": " + why);
    return corrupt("video " + path + ": not a readable video container (" + why + ")");
  }
  file.format.reset(format);
  rc = avformat_find_stream_info(format, nullptr);
  if (rc < 0)
    return corrupt("video " + path + ": no stream information (" + av_error_text(rc) + ")");
  rc = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &file.codec, 0);
  if (rc == AVERROR_DECODER_NOT_FOUND)
    return unsupported("video " + path + ": no decoder in this FFmpeg for its video codec");
  if (rc < 0) return corrupt("video " + path + ": no video stream");
  file.stream_index = rc;
  return file;
}

Result<CodecContextPtr> open_video_decoder(const VideoFile& file, int threads) {
  CodecContextPtr context(avcodec_alloc_context3(file.codec));
  if (!context) return io_error("video " + file.path + ": out of memory for a decoder");
  int rc = avcodec_parameters_to_context(context.get(), file.stream()->codecpar);
  if (rc >= 0) {
    context->thread_count = threads;
    context->pkt_timebase = file.stream()->time_base;
    rc = avcodec_open2(context.get(), file.codec, nullptr);
  }
  if (rc < 0)
    return unsupported("video " + file.path + ": its " + file.codec->name +
                       " decoder does not open (" + av_error_text(rc) + ")");
  return context;
}

}  // namespace stoker::video
