#include "stoker/video/video_index.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>

extern "C" {
#include <libavutil/display.h>
}

#include "stoker/video/video_file.h"

namespace stoker::video {

int64_t VideoIndex::keyframe_at_or_before(int64_t i) const {
  for (int64_t k = std::min<int64_t>(i, frame_count() - 1); k >= 0; --k)
    if (keyframe[static_cast<size_t>(k)]) return k;
  return -1;
}

int VideoIndex::quarter_turns() const {
  if (!rotation) return 0;
  const long turns = std::lround(*rotation / 90.0) % 4;
  return static_cast<int>(turns < 0 ? turns + 4 : turns);
}

namespace {

double pts_seconds(int64_t pts, int num, int den) { return static_cast<double>(pts) * num / den; }

}  // namespace

double VideoIndex::seconds(int64_t i) const {
  return pts_seconds(pts[static_cast<size_t>(i)], time_base_num, time_base_den);
}

double VideoIndex::end_seconds() const {
  return pts_seconds(end_pts, time_base_num, time_base_den);
}

double VideoIndex::average_fps() const {
  const double span = end_seconds() - begin_seconds();
  return span > 0 ? static_cast<double>(frame_count()) / span : 0;
}

int64_t VideoIndex::frame_played_at(double t) const {
  if (!(t >= begin_seconds() && t < end_seconds())) return -1;
  // Frames 0..n-2 end where the next starts; the last one never does.
  const auto next = std::partition_point(pts.begin() + 1, pts.end(), [&](int64_t start) {
    return pts_seconds(start, time_base_num, time_base_den) <= t;
  });
  return next - (pts.begin() + 1);
}

namespace {

// The stream's display matrix's rotation (FFmpeg 5.1 keeps it in the stream's side data).
std::optional<double> stream_rotation(const AVStream* stream) {
  size_t size = 0;
  const uint8_t* matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (matrix == nullptr || size < 9 * sizeof(int32_t)) return std::nullopt;
  const double degrees = av_display_rotation_get(reinterpret_cast<const int32_t*>(matrix));
  if (std::isnan(degrees)) return std::nullopt;
  return degrees;
}

}  // namespace

Result<VideoIndex> read_video_index(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(VideoFile file, open_video_file(path));
  return read_video_index(file);
}

namespace {

// read_video_index of `file`, counting in `packets` the video stream's packets read (discarded
// ones too); a packet a keyframe where `keyframe_at` says so of its position (else where its
// flags do).
Result<VideoIndex> read_index(VideoFile& file, int64_t& packets,
                              const std::function<bool(int64_t pos)>& keyframe_at = nullptr) {
  const std::string& path = file.path;
  const AVStream* stream = file.stream();
  VideoIndex index;
  index.path = path;
  index.codec = file.codec->name;
  index.time_base_num = stream->time_base.num;
  index.time_base_den = stream->time_base.den;
  index.width = stream->codecpar->width;
  index.height = stream->codecpar->height;
  index.rotation = stream_rotation(stream);
  if (index.width <= 0 || index.height <= 0)
    return corrupt(video_named(path) + ": its video stream has no frame size");

  struct Entry {
    int64_t pts;
    int64_t duration;
    bool key;
  };
  std::vector<Entry> entries;
  // A stream that reorders frames (B-frames) but whose packets carry no presentation time where
  // the frame is a reference one (AVI: only a B-frame's is known, its decoding time): a
  // reference frame is shown when the next one is decoded, at that one's decoding time, as the
  // decoder's reordering gives it; the last one is shown last. Otherwise a packet without a
  // presentation time is shown at its decoding time (as torchcodec).
  const bool reordered = stream->codecpar->video_delay > 0;
  std::optional<size_t> held;  // the reference frame not yet shown
  PacketPtr packet(av_packet_alloc());
  if (!packet) return io_error(video_named(path) + ": out of memory for a packet");
  for (;;) {
    const int rc = av_read_frame(file.format.get(), packet.get());
    if (rc == AVERROR_EOF) break;
    if (rc < 0)
      return corrupt(video_named(path) + ": unreadable after frame " +
                     std::to_string(entries.size()) + " (" + failure_text(file, rc) + ")");
    if (packet->stream_index == file.stream_index) ++packets;
    if (packet->stream_index == file.stream_index && !(packet->flags & AV_PKT_FLAG_DISCARD)) {
      int64_t pts = packet->pts;
      if (pts == AV_NOPTS_VALUE && reordered && packet->dts != AV_NOPTS_VALUE) {
        if (held) entries[*held].pts = packet->dts;
        held = entries.size();
      } else if (pts == AV_NOPTS_VALUE) {
        pts = packet->dts;
      }
      const bool key =
          keyframe_at ? keyframe_at(packet->pos) : (packet->flags & AV_PKT_FLAG_KEY) != 0;
      entries.push_back({pts, packet->duration, key});
    }
    av_packet_unref(packet.get());
  }
  if (entries.empty()) return corrupt(video_named(path) + ": no frames");
  int64_t end_pts = INT64_MIN;
  const auto extend = [&](const Entry& e) {
    if (e.pts != AV_NOPTS_VALUE) end_pts = std::max(end_pts, e.pts + e.duration);
  };
  for (const Entry& e : entries) extend(e);
  if (held && end_pts != INT64_MIN) {
    entries[*held].pts = end_pts;
    extend(entries[*held]);
  }
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].pts == AV_NOPTS_VALUE)
      return corrupt(video_named(path) + ": packet " + std::to_string(i) + " has no timestamp");
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.pts < b.pts; });
  for (size_t i = 1; i < entries.size(); ++i)
    if (entries[i].pts == entries[i - 1].pts)
      return corrupt(video_named(path) + ": frames " + std::to_string(i - 1) + " and " +
                     std::to_string(i) + " share the timestamp " + std::to_string(entries[i].pts));
  index.end_pts = end_pts;
  index.pts.reserve(entries.size());
  index.keyframe.reserve(entries.size());
  for (const Entry& e : entries) {
    index.pts.push_back(e.pts);
    index.keyframe.push_back(e.key ? 1 : 0);
  }
  if (!index.keyframe[0]) return corrupt(video_named(path) + ": its first frame is no keyframe");
  return index;
}

}  // namespace

Result<VideoIndex> read_video_index(VideoFile& file) {
  int64_t packets = 0;
  return read_index(file, packets);
}

std::optional<VideoIndex> read_video_index_from_tables(VideoFile& file) {
  // libavformat's mov demuxer ("mov,mp4,m4a,3gp,3g2,mj2") lists every sample of a file that is
  // not fragmented in its header, and makes each packet's times and flags from that list.
  if (!file.reader || std::string_view(file.format->iformat->name).substr(0, 4) != "mov,")
    return std::nullopt;
  // Its keyframes as the tables list them (read with zeros for data, packets lose the flag).
  AVStream* stream = file.stream();
  const int listed = avformat_index_get_entries_count(stream);
  std::unordered_map<int64_t, bool> keyframes;
  for (int i = 0; i < listed; ++i) {
    const AVIndexEntry* entry = avformat_index_get_entry(stream, i);
    keyframes[entry->pos] = (entry->flags & AVINDEX_KEYFRAME) != 0;
  }
  const auto keyframe_at = [&](int64_t pos) {
    const auto at = keyframes.find(pos);
    return at != keyframes.end() && at->second;
  };
  int64_t packets = 0;
  file.reader->hollow = true;
  Result<VideoIndex> index = read_index(file, packets, keyframe_at);
  file.reader->hollow = false;
  // Fragments (samples listed after the header), or a parser that reads the packets' data,
  // would make it from the zeros: not taken.
  if (!index.is_ok() || packets != listed || av_stream_get_parser(file.stream()) != nullptr)
    return std::nullopt;
  return std::move(index).value();
}

}  // namespace stoker::video
