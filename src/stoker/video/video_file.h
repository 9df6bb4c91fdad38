#pragma once
// A video file opened for reading: its container (libavformat) and its best video stream. Opening
// checks that there is a video stream whose codec this FFmpeg decodes; every failure is a one-line
// Status naming the file. FFmpeg's own logging is silenced once per process (errors come back as
// Statuses). Move-only; one thread at a time.

#include <string>

#include "stoker/util/status.h"
#include "stoker/video/ffmpeg_handles.h"

namespace stoker::video {

struct VideoFile {
  std::string path;
  FormatContextPtr format;
  int stream_index = -1;
  const AVCodec* codec = nullptr;  // the stream's decoder

  AVStream* stream() const { return format->streams[stream_index]; }
};

// Opens `path` and finds its video stream.
Result<VideoFile> open_video_file(const std::string& path);

// A decoder for the file's video stream, on `threads` threads (0: FFmpeg chooses).
Result<CodecContextPtr> open_video_decoder(const VideoFile& file, int threads);

}  // namespace stoker::video
