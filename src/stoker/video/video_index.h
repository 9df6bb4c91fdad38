#pragma once
// A video file's frame index, read from its packets without decoding them: every frame's
// presentation timestamp in presentation order (frame i is the i-th frame shown, as torchcodec's
// exact mode counts them; where packets hold decoding times only, as AVI's with B-frames, each
// reference frame is shown at the next one's decoding time, as FFmpeg's decoder reorders them),
// which frames are keyframes, the stream's time base, its coded size and
// rotation (which decoding applies, as torchcodec does), and the stream's times as torchcodec's
// scanned metadata gives them (begin_seconds, end_seconds, average_fps). The frames a decoder must
// seek to and decode for any frame follow from it (keyframe_at_or_before). A value;
// thread-compatible.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/util/status.h"
#include "stoker/video/video_file.h"

namespace stoker::video {

struct VideoIndex {
  std::string path;
  std::string codec;      // FFmpeg's decoder name: "h264", "vp9", "mpeg4"
  int time_base_num = 0;  // seconds per timestamp unit: num / den
  int time_base_den = 1;
  int width = 0;  // coded size, before any rotation
  int height = 0;
  std::optional<double> rotation;  // display matrix's counter-clockwise degrees, if any
  std::vector<int64_t> pts;        // per frame, increasing (presentation order)
  std::vector<uint8_t> keyframe;   // per frame: 1 when a decode may start there
  int64_t end_pts = 0;             // the largest pts + duration of a packet: the stream's end

  int64_t frame_count() const { return static_cast<int64_t>(pts.size()); }
  // The counter-clockwise quarter turns that make a frame upright, 0 to 3: the rotation
  // rounded to the nearest multiple of 90 degrees (torchcodec's rule); 0 without one.
  int quarter_turns() const;
  // A frame's size once upright (width and height swapped by an odd number of turns).
  int upright_width() const { return quarter_turns() % 2 ? height : width; }
  int upright_height() const { return quarter_turns() % 2 ? width : height; }
  // The last keyframe at or before frame `i` (presentation order), or -1 when none is.
  int64_t keyframe_at_or_before(int64_t i) const;
  // Frame `i`'s time in seconds.
  double seconds(int64_t i) const;
  // torchcodec's begin_stream_seconds (the first frame's time), end_stream_seconds (end_pts's)
  // and average_fps (frames over that span; 0 for a span of 0).
  double begin_seconds() const { return seconds(0); }
  double end_seconds() const;
  double average_fps() const;
  // The frame shown at `seconds` (get_frames_played_at's): the first whose next frame starts
  // after it, the last frame from its start on. -1 outside [begin_seconds, end_seconds).
  int64_t frame_played_at(double seconds) const;
};

// Reads every packet of `path`'s video stream. A file that has no decodable video stream, that
// cannot be read to its end, or that holds no frame is a one-line error naming it.
Result<VideoIndex> read_video_index(const std::string& path);

// The same of an open video (read to its end: a decoder seeks before it reads).
Result<VideoIndex> read_video_index(VideoFile& file);

// The same of an mp4/mov video read through VideoBytes, from its header's sample tables alone:
// its packets' data is not read (its reads are hollow, video_file.h's ByteReader), so a remote
// video's first open fetches its header, not the file. Equal to read_video_index's (tested over
// the project's video set); nullopt where it cannot be had so (another container, a fragmented
// file, a stream whose packets a parser reads, any error): read_video_index then, on `file`
// opened again (its reader's buffer holds zeros).
std::optional<VideoIndex> read_video_index_from_tables(VideoFile& file);

}  // namespace stoker::video
