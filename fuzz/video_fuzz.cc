// libFuzzer target for a video held in memory (a record's bytes, video/): opening it through
// FFmpeg's demuxers over stoker's reader (open_video_bytes), its frame index (read_video_index),
// a clip's frames (clip_frame_indices) decoded and turned upright (VideoFrameDecoder). For each
// input: every step either succeeds or fails with one line; an index holds frames in increasing
// presentation order, its first a keyframe; a clip's frames are inside the video; decoded frames
// come once each, of the index's upright size. Any violation is a __builtin_trap(); ASan and
// UBSan report the rest. docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "stoker/video/clip_sampler.h"
#include "stoker/video/frame_decoder.h"
#include "stoker/video/video_index.h"

namespace {

void check_one_line(const stoker::Status& status) {
  stoker::fuzz::check(!status.is_ok() && status.message().find('\n') == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  using namespace stoker::video;
  using fuzz::check;
  Result<VideoFile> file = open_video_bytes("", ByteSpan{data, size});
  if (!file.is_ok()) return check_one_line(file.status()), 0;
  Result<VideoIndex> index = read_video_index(file.value());
  if (!index.is_ok()) return check_one_line(index.status()), 0;
  const VideoIndex& v = index.value();
  check(v.frame_count() > 0 && v.keyframe.size() == v.pts.size() && v.keyframe[0] == 1);
  for (size_t i = 1; i < v.pts.size(); ++i) check(v.pts[i - 1] < v.pts[i]);
  // Frames of at most 2^22 pixels are decoded (the decode_clip default's bound is larger).
  if (int64_t{v.width} * v.height > (int64_t{1} << 22)) return 0;
  ClipSampler sampler;
  sampler.num_clips = 2;
  sampler.frames_per_clip = 3;
  sampler.frame_step = 2;
  CounterRng rng(size, 7);
  Result<std::vector<int64_t>> frames = clip_frame_indices(sampler, v.frame_count(), rng, "");
  if (!frames.is_ok()) return check_one_line(frames.status()), 0;
  for (const int64_t f : frames.value()) check(f >= 0 && f < v.frame_count());
  Result<VideoFrameDecoder> decoder = VideoFrameDecoder::open(std::move(file).value(), v);
  if (!decoder.is_ok()) return check_one_line(decoder.status()), 0;
  std::vector<int> taken(frames.value().size(), 0);
  const Status decoded = decoder.value().decode_each(
      frames.value(), [&](const uint8_t* rgb, ptrdiff_t stride, const std::vector<size_t>& slots) {
        const ptrdiff_t last = (v.upright_height() - 1) * stride + v.upright_width() * 3 - 1;
        check(rgb != nullptr && last >= 0 && !slots.empty());
        volatile uint8_t sum = rgb[0] ^ rgb[last];  // the frame's bytes are readable
        (void)sum;
        for (const size_t slot : slots) check(slot < taken.size() && ++taken[slot] == 1);
        return Status::ok();
      });
  if (!decoded.is_ok()) return check_one_line(decoded), 0;
  for (const int t : taken) check(t == 1);
  return 0;
}
