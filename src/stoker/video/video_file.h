#pragma once
// A video opened for reading, from a file or from bytes read at random (video_bytes.h: a
// record's in memory, a remote file's by ranges): its container (libavformat) and its best video
// stream. Opening checks that there is a video stream whose
// codec this FFmpeg decodes; every failure is a one-line Status naming the file. FFmpeg's own
// logging is silenced once per process (errors come back as Statuses). Move-only; one thread at
// a time.

#include <cstdint>
#include <memory>
#include <string>

#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"
#include "stoker/video/ffmpeg_handles.h"
#include "stoker/video/video_bytes.h"

namespace stoker::video {

// A video's bytes as FFmpeg's I/O reads them: the read position it has reached, the first
// failure of a read (FFmpeg sees an I/O error; errors give this one's message), and whether
// reads are hollow: served as zeros, nothing read (an index read from a container's tables,
// video_cache.cc).
struct ByteReader {
  std::unique_ptr<VideoBytes> bytes;
  int64_t position = 0;
  Status failed;
  bool hollow = false;
};

struct VideoFile {
  std::string path;  // the file's path, or the name a video in memory goes by in errors
  // A video read through VideoBytes: the reader and FFmpeg's I/O over it (freed after `format`).
  std::unique_ptr<ByteReader> reader;
  AvioContextPtr io;
  FormatContextPtr format;
  int stream_index = -1;
  const AVCodec* codec = nullptr;  // the stream's decoder

  AVStream* stream() const { return format->streams[stream_index]; }
};

// What opening a video found, given to a later open of the same bytes (video_cache.h): the
// container's format as probed, the video stream chosen and its parameters as
// avformat_find_stream_info completed them.
struct VideoStreamInfo {
  const AVInputFormat* container = nullptr;
  int stream_index = -1;
  CodecParametersPtr parameters;
};

// How errors name a video: "video PATH", or "the video" for one in memory named "".
inline std::string video_named(const std::string& path) {
  return path.empty() ? "the video" : "video " + path;
}

// Why FFmpeg's call on `file` gave `rc`: its reader's failure where a read failed, else FFmpeg's
// text of `rc`.
std::string failure_text(const VideoFile& file, int rc);

// Opens `path` and finds its video stream.
Result<VideoFile> open_video_file(const std::string& path);

// Opens the video held in `bytes` (borrowed: they outlive the VideoFile), named `name` (or "":
// a record's, which the loader names).
Result<VideoFile> open_video_bytes(const std::string& name, ByteSpan bytes);

// Opens the video `bytes` read (named bytes->name()).
Result<VideoFile> open_video_bytes(std::unique_ptr<VideoBytes> bytes);

// Opens `bytes` as `known` says an earlier open of the same bytes found them: not probed, no
// stream information read (the stream's parameters are known's), no stream chosen.
Result<VideoFile> open_known_video_bytes(const std::string& name, ByteSpan bytes,
                                         const VideoStreamInfo& known);
Result<VideoFile> open_known_video_bytes(std::unique_ptr<VideoBytes> bytes,
                                         const VideoStreamInfo& known);

// What opening `file` found (for open_known_video_bytes).
Result<VideoStreamInfo> stream_info_of(const VideoFile& file);

// A decoder for the file's video stream, on `threads` threads (0: FFmpeg chooses).
Result<CodecContextPtr> open_video_decoder(const VideoFile& file, int threads);

}  // namespace stoker::video
