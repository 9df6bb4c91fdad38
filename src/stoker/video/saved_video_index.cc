#include "stoker/video/saved_video_index.h"

#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <cstring>

#include "stoker/util/atomic_file.h"
#include "stoker/util/saved_form.h"
#include "stoker/video/saved_video_bound.h"

namespace stoker::video {
namespace {

// Version 2 of the saved form (its magic's last byte): a new layout, or new timestamps of the
// same file, is a new magic. 2: AVI's frames with B-frames in display order (1's were in
// decoding order; such a file is indexed again).
constexpr char kMagic[8] = {'S', 'T', 'K', 'V', 'I', 'D', 'X', '2'};
// A frame's saved bytes (its pts and its keyframe flag): bounds a count read back.
constexpr uint64_t kFrameBytes = 9;
// The largest saved file read: 9 bytes a frame of a day at 1,000 frames a second, and more.
constexpr uint64_t kMaxSavedBytes = uint64_t{1} << 30;

uint64_t ffmpeg_versions() {
  return (uint64_t{avformat_version()} << 32) | uint64_t{avcodec_version()};
}

void put_int(std::string& out, int64_t v) { put_u64(out, static_cast<uint64_t>(v)); }

void put_double(std::string& out, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  put_u64(out, bits);
}

// The demuxer named `name` exactly (AVInputFormat::name), or null.
const AVInputFormat* demuxer_named(const std::string& name) {
  void* at = nullptr;
  while (const AVInputFormat* format = av_demuxer_iterate(&at))
    if (name == format->name) return format;
  return nullptr;
}

// Reads the body's values in order; a read past the end or out of its range fails it.
class BodyReader {
 public:
  explicit BodyReader(ByteSpan body) : in_(body) {}

  bool u64(uint64_t& v) { return in_.u64(v); }
  bool text(std::string& out) { return in_.text(out); }
  bool count(uint64_t& n) { return in_.count(n, kFrameBytes); }
  bool done() const { return in_.done(); }
  // An integer in [low, high].
  template <typename T>
  bool in(T& v, int64_t low, int64_t high) {
    uint64_t raw = 0;
    if (!in_.u64(raw)) return false;
    const auto value = static_cast<int64_t>(raw);
    if (value < low || value > high) return false;
    v = static_cast<T>(value);
    return true;
  }
  bool real(double& v) {
    uint64_t bits = 0;
    if (!in_.u64(bits)) return false;
    std::memcpy(&v, &bits, sizeof v);
    return std::isfinite(v);
  }

 private:
  SavedReader in_;
};

void put_parameters(std::string& out, const AVCodecParameters& p) {
  for (const int64_t v : {int64_t{p.codec_type},
                          int64_t{p.codec_id},
                          int64_t{p.codec_tag},
                          int64_t{p.format},
                          p.bit_rate,
                          int64_t{p.bits_per_coded_sample},
                          int64_t{p.bits_per_raw_sample},
                          int64_t{p.profile},
                          int64_t{p.level},
                          int64_t{p.width},
                          int64_t{p.height},
                          int64_t{p.sample_aspect_ratio.num},
                          int64_t{p.sample_aspect_ratio.den},
                          int64_t{p.field_order},
                          int64_t{p.color_range},
                          int64_t{p.color_primaries},
                          int64_t{p.color_trc},
                          int64_t{p.color_space},
                          int64_t{p.chroma_location},
                          int64_t{p.video_delay}})
    put_int(out, v);
  put_text(out, std::string(reinterpret_cast<const char*>(p.extradata),
                            p.extradata == nullptr ? 0 : static_cast<size_t>(p.extradata_size)));
}

// A video stream's parameters as put_parameters saved them, each in its type's range.
bool read_parameters(BodyReader& in, AVCodecParameters& p) {
  constexpr int64_t kMax = INT_MAX;
  std::string extradata;
  if (!(in.in(p.codec_type, AVMEDIA_TYPE_VIDEO, AVMEDIA_TYPE_VIDEO) &&
        in.in(p.codec_id, 1, AV_CODEC_ID_WRAPPED_AVFRAME) && in.in(p.codec_tag, 0, UINT32_MAX) &&
        in.in(p.format, -1, AV_PIX_FMT_NB - 1) && in.in(p.bit_rate, 0, INT64_MAX) &&
        in.in(p.bits_per_coded_sample, 0, kMax) && in.in(p.bits_per_raw_sample, 0, kMax) &&
        in.in(p.profile, INT_MIN, kMax) && in.in(p.level, INT_MIN, kMax) &&
        in.in(p.width, 1, kMax) && in.in(p.height, 1, kMax) &&
        in.in(p.sample_aspect_ratio.num, 0, kMax) && in.in(p.sample_aspect_ratio.den, 0, kMax) &&
        in.in(p.field_order, AV_FIELD_UNKNOWN, AV_FIELD_BT) &&
        in.in(p.color_range, 0, AVCOL_RANGE_NB - 1) &&
        in.in(p.color_primaries, 0, AVCOL_PRI_NB - 1) && in.in(p.color_trc, 0, AVCOL_TRC_NB - 1) &&
        in.in(p.color_space, 0, AVCOL_SPC_NB - 1) &&
        in.in(p.chroma_location, 0, AVCHROMA_LOC_NB - 1) && in.in(p.video_delay, 0, kMax) &&
        in.text(extradata) && extradata.size() <= size_t{kMax} - AV_INPUT_BUFFER_PADDING_SIZE))
    return false;
  if (extradata.empty()) return true;
  p.extradata = static_cast<uint8_t*>(av_mallocz(extradata.size() + AV_INPUT_BUFFER_PADDING_SIZE));
  if (p.extradata == nullptr) return false;
  std::memcpy(p.extradata, extradata.data(), extradata.size());
  p.extradata_size = static_cast<int>(extradata.size());
  return true;
}

// Whether `index` keeps what read_video_index guarantees of an index of a stream of `p`.
bool index_holds(const VideoIndex& index, const AVCodecParameters& p, const AVCodec* decoder) {
  if (decoder == nullptr || index.codec != decoder->name || index.width != p.width ||
      index.height != p.height || index.time_base_num <= 0 || index.time_base_den <= 0 ||
      index.pts.empty() || index.keyframe.size() != index.pts.size() || index.keyframe[0] != 1)
    return false;
  for (size_t i = 0; i < index.pts.size(); ++i)
    if (index.keyframe[i] > 1 || (i > 0 && index.pts[i] <= index.pts[i - 1])) return false;
  return true;
}

std::string key_text(const VideoKey& key) {
  return fmt::format("{:016x}{:016x}-{}", key.hash.high, key.hash.low, key.size);
}

}  // namespace

VideoKey video_key(ByteSpan bytes) {
  return VideoKey{xxh3_128(bytes.data, bytes.size), bytes.size};
}

std::string encode_known_video(const VideoKey& key, const KnownVideo& known) {
  std::string body;
  put_u64(body, ffmpeg_versions());
  for (const uint64_t v : {key.hash.low, key.hash.high, key.size}) put_u64(body, v);
  put_text(body, known.stream.container->name);
  put_int(body, known.stream.stream_index);
  put_parameters(body, *known.stream.parameters);
  const VideoIndex& index = known.index;
  put_text(body, index.codec);
  for (const int64_t v : {int64_t{index.time_base_num}, int64_t{index.time_base_den},
                          int64_t{index.width}, int64_t{index.height}, index.end_pts})
    put_int(body, v);
  put_int(body, index.rotation.has_value());
  put_double(body, index.rotation.value_or(0));
  put_u64(body, index.pts.size());
  for (const int64_t pts : index.pts) put_int(body, pts);
  put_text(body, std::string(index.keyframe.begin(), index.keyframe.end()));
  return seal(kMagic, body);
}

Result<KnownVideo> decode_known_video(ByteSpan bytes, const VideoKey& key) {
  const auto refused = [&](const char* why) {
    return corrupt(fmt::format("saved video index {}: {}", key_text(key), why));
  };
  const std::optional<ByteSpan> body = unseal(bytes, kMagic);
  if (!body) return refused("not a whole saved index of this version (its magic or checksum)");
  BodyReader in(*body);
  uint64_t versions = 0;
  VideoKey saved;
  if (!in.u64(versions) || versions != ffmpeg_versions()) return refused("read by another FFmpeg");
  if (!in.u64(saved.hash.low) || !in.u64(saved.hash.high) || !in.u64(saved.size) || !(saved == key))
    return refused("of other bytes");
  KnownVideo known;
  std::string container;
  if (!in.text(container) || (known.stream.container = demuxer_named(container)) == nullptr ||
      !in.in(known.stream.stream_index, 0, INT_MAX))
    return refused("no container of this FFmpeg's, or no stream");
  known.stream.parameters.reset(avcodec_parameters_alloc());
  if (!known.stream.parameters) return io_error("out of memory for a saved stream's parameters");
  AVCodecParameters& parameters = *known.stream.parameters;
  if (!read_parameters(in, parameters)) return refused("its stream's parameters are damaged");
  VideoIndex& index = known.index;
  bool rotated = false;
  double rotation = 0;
  uint64_t frames = 0;
  std::string keyframes;
  if (!in.text(index.codec) || !in.in(index.time_base_num, 1, INT_MAX) ||
      !in.in(index.time_base_den, 1, INT_MAX) || !in.in(index.width, 1, INT_MAX) ||
      !in.in(index.height, 1, INT_MAX) || !in.in(index.end_pts, INT64_MIN, INT64_MAX) ||
      !in.in(rotated, 0, 1) || !in.real(rotation) || !in.count(frames))
    return refused("its index is damaged");
  if (rotated) index.rotation = rotation;
  index.pts.resize(frames);
  for (int64_t& pts : index.pts)
    if (!in.in(pts, INT64_MIN, INT64_MAX)) return refused("its index is damaged");
  if (!in.text(keyframes) || !in.done()) return refused("its index is damaged");
  index.keyframe.assign(keyframes.begin(), keyframes.end());
  if (!index_holds(index, parameters, avcodec_find_decoder(parameters.codec_id)))
    return refused("its index breaks what an opening guarantees");
  return known;
}

std::string saved_video_file(const std::string& cache_dir, const VideoKey& key) {
  // In one of 4,096 folders: a writer lists its folder for killed writers' temporaries
  // (util/atomic_file.h), which stays short however many videos there are.
  return fmt::format("{}/{}/{:03x}/{}.index", cache_dir, kVideoIndexFolder, key.hash.high >> 52,
                     key_text(key));
}

std::optional<KnownVideo> load_known_video(const std::string& cache_dir, const VideoKey& key) {
  if (cache_dir.empty()) return std::nullopt;
  const std::string file = saved_video_file(cache_dir, key);
  Result<std::string> bytes = read_file(file, kMaxSavedBytes);
  if (!bytes.is_ok()) return std::nullopt;
  Result<KnownVideo> known = decode_known_video(
      {reinterpret_cast<const uint8_t*>(bytes.value().data()), bytes.value().size()}, key);
  if (!known.is_ok()) return std::nullopt;
  touch_saved_video(file);
  return std::move(known).value();
}

void save_known_video(const std::string& cache_dir, const VideoKey& key, const KnownVideo& known) {
  if (cache_dir.empty()) return;
  const std::string bytes = encode_known_video(key, known);
  save_cache_file(saved_video_file(cache_dir, key), bytes);
  count_saved_video(cache_dir, bytes.size());
}

}  // namespace stoker::video
