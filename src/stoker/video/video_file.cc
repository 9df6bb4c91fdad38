#include "stoker/video/video_file.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace stoker::video {

namespace {

constexpr int kIoBufferBytes = 1 << 16;

int read_bytes(void* opaque, uint8_t* buffer, int size) {
  ByteReader& reader = *static_cast<ByteReader*>(opaque);
  if (!reader.failed.is_ok()) return AVERROR(EIO);
  const int64_t left = static_cast<int64_t>(reader.bytes->size()) - reader.position;
  if (left <= 0) return AVERROR_EOF;
  const int n = static_cast<int>(std::min<int64_t>(left, size));
  if (reader.hollow) {
    std::memset(buffer, 0, static_cast<size_t>(n));
  } else {
    reader.failed =
        reader.bytes->read(static_cast<uint64_t>(reader.position), buffer, static_cast<size_t>(n));
    if (!reader.failed.is_ok()) return AVERROR(EIO);
  }
  reader.position += n;
  return n;
}

int64_t seek_bytes(void* opaque, int64_t offset, int whence) {
  ByteReader& reader = *static_cast<ByteReader*>(opaque);
  const int64_t size = static_cast<int64_t>(reader.bytes->size());
  if (whence & AVSEEK_SIZE) return size;
  int64_t to = offset;
  switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET:
      break;
    case SEEK_CUR:
      to += reader.position;
      break;
    case SEEK_END:
      to += size;
      break;
    default:
      return AVERROR(EINVAL);
  }
  if (to < 0 || to > size) return AVERROR(EINVAL);
  reader.position = to;
  return to;
}

void silence_ffmpeg() {
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_QUIET); });
}

// Whether the container's header gave a video stream's size and pixel format.
bool header_describes_video(const AVFormatContext& format) {
  for (unsigned i = 0; i < format.nb_streams; ++i) {
    const AVCodecParameters& p = *format.streams[i]->codecpar;
    if (p.codec_type == AVMEDIA_TYPE_VIDEO && p.width > 0 && p.height > 0 && p.format >= 0)
      return true;
  }
  return false;
}

// The error for a video whose codec `id` this FFmpeg has no decoder for, naming it.
Status no_decoder(const std::string& path, AVCodecID id) {
  return unsupported(video_named(path) + ": no decoder in this FFmpeg for its video codec " +
                     avcodec_get_name(id));
}

// Opens `format` (allocated, its I/O set where the video is in memory) as file.path and finds
// its video stream.
Result<VideoFile> open_format(VideoFile file, AVFormatContext* format) {
  const std::string& path = file.path;
  const char* url = file.io ? nullptr : path.c_str();
  int rc = avformat_open_input(&format, url, nullptr, nullptr);  // frees `format` on failure
  if (rc < 0) {
    const std::string why = failure_text(file, rc);
    if (rc == AVERROR(ENOENT)) return not_found(video_named(path) + ": " + why);
    if (file.reader && !file.reader->failed.is_ok())
      return Status(file.reader->failed.code(), video_named(path) + ": " + why);
    return corrupt(video_named(path) + ": not a readable video container (" + why + ")");
  }
  file.format.reset(format);
  // A container whose header gives its video's size and pixel format (mp4, mkv) is not probed:
  // probing reads ahead and decodes frames to learn what the header says (about 0.8 ms of a
  // 340x256 clip's 3.7 ms of opening); other containers (avi) are.
  rc = header_describes_video(*format) ? 0 : avformat_find_stream_info(format, nullptr);
  if (rc < 0)
    return corrupt(video_named(path) + ": no stream information (" + av_error_text(rc) + ")");
  rc = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &file.codec, 0);
  if (rc == AVERROR_DECODER_NOT_FOUND) {
    const int stream = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    return no_decoder(path,
                      stream >= 0 ? format->streams[stream]->codecpar->codec_id : AV_CODEC_ID_NONE);
  }
  if (rc < 0) return corrupt(video_named(path) + ": no video stream");
  file.stream_index = rc;
  return file;
}

}  // namespace

std::string failure_text(const VideoFile& file, int rc) {
  if (file.reader && !file.reader->failed.is_ok()) return file.reader->failed.message();
  return av_error_text(rc);
}

Result<VideoFile> open_video_file(const std::string& path) {
  silence_ffmpeg();
  VideoFile file;
  file.path = path;
  return open_format(std::move(file), nullptr);
}

namespace {

// A format context reading `bytes` through file.io (file.reader set on them), or null for want
// of memory.
AVFormatContext* reader_format(VideoFile& file, std::unique_ptr<VideoBytes> bytes) {
  file.reader = std::make_unique<ByteReader>();
  file.reader->bytes = std::move(bytes);
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferBytes));
  AVFormatContext* format = avformat_alloc_context();
  if (buffer != nullptr)
    file.io.reset(avio_alloc_context(buffer, kIoBufferBytes, 0, file.reader.get(), read_bytes,
                                     nullptr, seek_bytes));
  if (!file.io || format == nullptr) {
    if (!file.io) av_free(buffer);
    avformat_free_context(format);
    return nullptr;
  }
  format->pb = file.io.get();
  return format;
}

}  // namespace

Result<VideoFile> open_video_bytes(std::unique_ptr<VideoBytes> bytes) {
  silence_ffmpeg();
  VideoFile file;
  file.path = bytes->name();
  AVFormatContext* format = reader_format(file, std::move(bytes));
  if (format == nullptr) return io_error(video_named(file.path) + ": out of memory for its reader");
  return open_format(std::move(file), format);
}

Result<VideoFile> open_video_bytes(const std::string& name, ByteSpan bytes) {
  return open_video_bytes(memory_video_bytes(name, bytes));
}

Result<VideoFile> open_known_video_bytes(std::unique_ptr<VideoBytes> bytes,
                                         const VideoStreamInfo& known) {
  silence_ffmpeg();
  VideoFile file;
  file.path = bytes->name();
  const std::string& name = file.path;
  AVFormatContext* format = reader_format(file, std::move(bytes));
  if (format == nullptr) return io_error(video_named(name) + ": out of memory for its reader");
  const int rc = avformat_open_input(&format, nullptr, known.container, nullptr);
  if (rc < 0) {
    if (!file.reader->failed.is_ok())
      return Status(file.reader->failed.code(),
                    video_named(name) + ": " + file.reader->failed.message());
    return corrupt(video_named(name) + ": not a readable video container (" + av_error_text(rc) +
                   ")");
  }
  file.format.reset(format);
  if (known.stream_index >= static_cast<int>(format->nb_streams) ||
      format->streams[known.stream_index]->codecpar->codec_id != known.parameters->codec_id)
    return corrupt(video_named(name) + ": its streams differ from its earlier opening");
  file.stream_index = known.stream_index;
  AVCodecParameters* parameters = format->streams[known.stream_index]->codecpar;
  if (avcodec_parameters_copy(parameters, known.parameters.get()) < 0)
    return io_error(video_named(name) + ": out of memory for its stream's parameters");
  file.codec = avcodec_find_decoder(parameters->codec_id);
  if (file.codec == nullptr) return no_decoder(name, parameters->codec_id);
  return file;
}

Result<VideoFile> open_known_video_bytes(const std::string& name, ByteSpan bytes,
                                         const VideoStreamInfo& known) {
  return open_known_video_bytes(memory_video_bytes(name, bytes), known);
}

Result<VideoStreamInfo> stream_info_of(const VideoFile& file) {
  VideoStreamInfo info;
  info.container = file.format->iformat;
  info.stream_index = file.stream_index;
  info.parameters.reset(avcodec_parameters_alloc());
  if (!info.parameters ||
      avcodec_parameters_copy(info.parameters.get(), file.stream()->codecpar) < 0)
    return io_error(video_named(file.path) + ": out of memory for its stream's parameters");
  return info;
}

Result<CodecContextPtr> open_video_decoder(const VideoFile& file, int threads) {
  CodecContextPtr context(avcodec_alloc_context3(file.codec));
  if (!context) return io_error(video_named(file.path) + ": out of memory for a decoder");
  int rc = avcodec_parameters_to_context(context.get(), file.stream()->codecpar);
  if (rc >= 0) {
    context->thread_count = threads;
    context->pkt_timebase = file.stream()->time_base;
    rc = avcodec_open2(context.get(), file.codec, nullptr);
  }
  if (rc < 0)
    return unsupported(video_named(file.path) + ": its " + file.codec->name +
                       " decoder does not open (" + av_error_text(rc) + ")");
  return context;
}

}  // namespace stoker::video
