// libFuzzer target for a video's saved index read back from the cache folder
// (decode_known_video, video/saved_video_index.h), which anything may have damaged. An input is
// the file's bytes; it is read as it is and again with its checksum made to hold (as
// shard_fuzz's checksums are), so that mutations reach the fields behind it, each time as the
// video of the key it holds (bytes 24 to 48) so that they also reach past the key. Each read
// either fails with one line (kCorrupt, "saved video index KEY: ...") or gives a known video
// whose index holds what an opening guarantees (frames in increasing presentation order, the
// first a keyframe, the stream's size), whose decoder opens or fails cleanly from its
// parameters, and whose saved form reads back to the same saved form. Any violation is a
// __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "stoker/util/checksum.h"
#include "stoker/video/saved_video_index.h"

namespace {

using namespace stoker;
using namespace stoker::video;
using fuzz::check;

ByteSpan span_of(const std::string& bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

// The key a saved file holds (after its magic, checksum and FFmpeg's versions), or zeros.
VideoKey key_in(const std::string& bytes) {
  VideoKey key;
  if (bytes.size() < 48) return key;
  std::memcpy(&key.hash.low, bytes.data() + 24, 8);
  std::memcpy(&key.hash.high, bytes.data() + 32, 8);
  std::memcpy(&key.size, bytes.data() + 40, 8);
  return key;
}

// What an opening guarantees of `known`'s index and stream.
void check_known(const KnownVideo& known) {
  const VideoIndex& v = known.index;
  const AVCodecParameters& p = *known.stream.parameters;
  check(known.stream.container != nullptr && known.stream.stream_index >= 0);
  check(v.frame_count() > 0 && v.keyframe.size() == v.pts.size() && v.keyframe[0] == 1);
  for (size_t i = 0; i < v.pts.size(); ++i)
    check(v.keyframe[i] <= 1 && (i == 0 || v.pts[i - 1] < v.pts[i]));
  check(v.width == p.width && v.height == p.height && v.width > 0 && v.height > 0);
  check(v.time_base_num > 0 && v.time_base_den > 0);
  const AVCodec* decoder = avcodec_find_decoder(p.codec_id);
  check(decoder != nullptr && v.codec == decoder->name);
  // The decoder a later opening makes from these parameters (open_video_decoder).
  CodecContextPtr context(avcodec_alloc_context3(decoder));
  check(context != nullptr);
  if (avcodec_parameters_to_context(context.get(), &p) >= 0) {
    context->thread_count = 1;
    (void)avcodec_open2(context.get(), decoder, nullptr);
  }
}

void read_as_saved(const std::string& bytes) {
  const VideoKey key = key_in(bytes);
  const Result<KnownVideo> known = decode_known_video(span_of(bytes), key);
  if (!known.is_ok()) {
    check(known.status().code() == StatusCode::kCorrupt);
    check(known.status().message().rfind("saved video index ", 0) == 0);
    check(known.status().message().find('\n') == std::string::npos);
    return;
  }
  check_known(known.value());
  const std::string again = encode_known_video(key, known.value());
  const Result<KnownVideo> back = decode_known_video(span_of(again), key);
  check(back.is_ok() && encode_known_video(key, back.value()) == again);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  read_as_saved(bytes);
  if (bytes.size() >= 16) {
    const uint64_t checksum = xxh3_64(bytes.data() + 16, bytes.size() - 16);
    std::memcpy(bytes.data() + 8, &checksum, 8);
    read_as_saved(bytes);
  }
  return 0;
}
