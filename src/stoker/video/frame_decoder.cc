#include "stoker/video/frame_decoder.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace stoker::video {

namespace {

// A decoder's get_buffer2: FFmpeg's, counting the pictures in the counter its opaque points to.
int count_picture(AVCodecContext* codec, AVFrame* frame, int flags) {
  ++*static_cast<std::atomic<int64_t>*>(codec->opaque);
  return avcodec_default_get_buffer2(codec, frame, flags);
}

}  // namespace

VideoFrameDecoder::VideoFrameDecoder(const VideoIndex& index, VideoFile file, CodecContextPtr codec)
    : index_(index),
      file_(std::move(file)),
      codec_(std::move(codec)),
      converter_(index.path, file_.stream()->time_base),
      packet_(av_packet_alloc()),
      frame_(av_frame_alloc()) {
  // Frame threads' contexts take get_buffer2 and opaque from this one at each packet.
  if (codec_->codec->capabilities & AV_CODEC_CAP_DR1) {
    pictures_ = std::make_unique<std::atomic<int64_t>>(0);
    codec_->opaque = pictures_.get();
    codec_->get_buffer2 = count_picture;
  }
}

int64_t VideoFrameDecoder::frames_decoded() const {
  return pictures_ ? pictures_->load() : frames_out_;
}

Result<VideoFrameDecoder> VideoFrameDecoder::open(const VideoIndex& index, int threads) {
  STOKER_ASSIGN_OR_RETURN(VideoFile file, open_video_file(index.path));
  return open(std::move(file), index, threads);
}

Result<VideoFrameDecoder> VideoFrameDecoder::open(VideoFile file, const VideoIndex& index,
                                                  int threads) {
  STOKER_ASSIGN_OR_RETURN(CodecContextPtr codec, open_video_decoder(file, threads));
  VideoFrameDecoder decoder(index, std::move(file), std::move(codec));
  if (!decoder.packet_ || !decoder.frame_)
    return io_error(video_named(index.path) + ": out of memory for a decoder's frames");
  return decoder;
}

Status VideoFrameDecoder::frame_error(int64_t frame, const std::string& what) const {
  const std::string at = video_named(index_.path) + ": frame " + std::to_string(frame) + ": ";
  // A read that failed (a remote video changed or unreachable) is why, whatever FFmpeg made of it.
  if (file_.reader && !file_.reader->failed.is_ok())
    return Status(file_.reader->failed.code(), at + file_.reader->failed.message());
  return corrupt(at + what);
}

namespace {

// The width x height RGB frame `rgb` (rows `stride` bytes apart) turned `turns` quarter turns
// counter-clockwise into `out`, packed (torch.rot90(frame, turns, dims=(H, W))): out[y][x] of
// its upright size is
//   1: rgb[x][width - 1 - y]   2: rgb[height - 1 - y][width - 1 - x]   3: rgb[height - 1 - x][y].
void turn_upright(const uint8_t* rgb, ptrdiff_t stride, int width, int height, int turns,
                  std::vector<uint8_t>& out) {
  const int out_width = turns % 2 ? height : width, out_height = turns % 2 ? width : height;
  out.resize(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < out_height; ++y)
    for (int x = 0; x < out_width; ++x) {
      const int sy = turns == 1 ? x : turns == 2 ? height - 1 - y : height - 1 - x;
      const int sx = turns == 1 ? width - 1 - y : turns == 2 ? width - 1 - x : y;
      std::memcpy(&out[(static_cast<size_t>(y) * out_width + x) * 3],
                  rgb + sy * stride + static_cast<ptrdiff_t>(sx) * 3, 3);
    }
}

}  // namespace

int64_t VideoFrameDecoder::frame_at(int64_t pts) const {
  if (pts == AV_NOPTS_VALUE) return -1;
  const auto at = std::lower_bound(index_.pts.begin(), index_.pts.end(), pts);
  return at == index_.pts.end() || *at != pts ? -1 : at - index_.pts.begin();
}

template <typename Take>
Status VideoFrameDecoder::decode_run(int64_t key, int64_t last, Take&& take) {
  const std::vector<int64_t>& pts = index_.pts;
  int rc = av_seek_frame(file_.format.get(), file_.stream_index, pts[static_cast<size_t>(key)],
                         AVSEEK_FLAG_BACKWARD);
  if (rc < 0) return frame_error(key, "cannot seek to its keyframe (" + av_error_text(rc) + ")");
  avcodec_flush_buffers(codec_.get());
  // The frames of [key, last] asked for whose packets are still to be sent. Once none is, the
  // decoder is drained instead of given the packets after them, which no frame asked for needs
  // (a frame's references come before it in decoding order) and the decoder would otherwise
  // decode to fill its reordering delay.
  int64_t unsent = std::count(asked_.begin() + key, asked_.begin() + last + 1, uint8_t{1});
  bool draining = false;
  for (;;) {
    // Every frame the decoder has ready, before it is given more.
    for (;;) {
      rc = avcodec_receive_frame(codec_.get(), frame_.get());
      if (rc == AVERROR(EAGAIN)) break;
      if (rc == AVERROR_EOF) return Status::ok();  // the caller finds what did not come
      if (rc < 0) return frame_error(key, "does not decode (" + av_error_text(rc) + ")");
      ++frames_out_;
      // A frame's time is its packet's, else that of the packet that let it out (a reference
      // frame of a stream reordered without presentation times: video_index.h); one with
      // neither, drained, is the reference frame the decoder held back: the stream's last.
      int64_t t = frame_->pts != AV_NOPTS_VALUE ? frame_->pts : frame_->pkt_dts;
      if (t == AV_NOPTS_VALUE && draining) t = pts.back();
      const auto at = std::lower_bound(pts.begin(), pts.end(), t);
      const int64_t i = at - pts.begin();
      if (at != pts.end() && *at == t && i >= key && i <= last)
        STOKER_RETURN_IF_ERROR(take(i, *frame_));
      av_frame_unref(frame_.get());
      // Frames come out in presentation order: none of [key, last] is still to come.
      if (t >= pts[static_cast<size_t>(last)]) return Status::ok();
    }
    if (draining) return Status::ok();
    rc = unsent == 0 ? AVERROR_EOF : av_read_frame(file_.format.get(), packet_.get());
    if (rc == AVERROR_EOF) {
      draining = true;
      rc = avcodec_send_packet(codec_.get(), nullptr);
    } else if (rc < 0) {
      return frame_error(key, "the file is unreadable past it (" + av_error_text(rc) + ")");
    } else if (packet_->stream_index != file_.stream_index) {
      av_packet_unref(packet_.get());
      continue;
    } else {
      // A frame nothing asks for may go undecoded where nothing refers to it (a non-reference
      // B-frame): the decoder skips it, and the frames asked for are the same.
      const int64_t frame = frame_at(packet_->pts);
      const bool wanted = frame < 0 || asked_[static_cast<size_t>(frame)];
      codec_->skip_frame = wanted ? AVDISCARD_DEFAULT : AVDISCARD_NONREF;
      rc = avcodec_send_packet(codec_.get(), packet_.get());
      av_packet_unref(packet_.get());
      if (rc >= 0 && frame >= key && frame <= last && asked_[static_cast<size_t>(frame)]) --unsent;
    }
    if (rc < 0 && rc != AVERROR(EAGAIN) && rc != AVERROR_EOF)
      return frame_error(key, "a packet after it does not decode (" + av_error_text(rc) + ")");
  }
}

Status VideoFrameDecoder::decode_each(const std::vector<int64_t>& indices, const FrameTaker& take) {
  const int64_t count = index_.frame_count();
  for (const int64_t i : indices)
    if (i < 0 || i >= count)
      return invalid_argument(video_named(index_.path) + ": frame " + std::to_string(i) +
                              " is out of range (" + std::to_string(count) + " frames)");
  const int width = index_.width, height = index_.height;
  rgb_.resize(static_cast<size_t>(width) * height * 3);

  // (frame, slot), in frame order: each group of one keyframe is one decode run.
  std::vector<std::pair<int64_t, size_t>> wanted;
  wanted.reserve(indices.size());
  for (size_t slot = 0; slot < indices.size(); ++slot) wanted.emplace_back(indices[slot], slot);
  std::sort(wanted.begin(), wanted.end());
  std::vector<uint8_t> filled(indices.size(), 0);
  std::vector<size_t> slots;
  asked_.assign(static_cast<size_t>(count), 0);
  for (const int64_t i : indices) asked_[static_cast<size_t>(i)] = 1;

  auto take_run = [&](size_t begin, size_t end) {
    return [&, begin, end](int64_t i, const AVFrame& frame) -> Status {
      auto first = std::lower_bound(wanted.begin() + begin, wanted.begin() + end,
                                    std::make_pair(i, size_t{0}));
      if (first == wanted.begin() + end || first->first != i) return Status::ok();
      if (frame.width != width || frame.height != height)
        return frame_error(i, "its size " + std::to_string(frame.width) + "x" +
                                  std::to_string(frame.height) + " differs from the stream's " +
                                  std::to_string(width) + "x" + std::to_string(height));
      STOKER_ASSIGN_OR_RETURN(const RgbRows rgb, converter_.convert(frame, rgb_.data(), width * 3));
      slots.clear();
      for (auto w = first; w != wanted.begin() + end && w->first == i; ++w) {
        slots.push_back(w->second);
        filled[w->second] = 1;
      }
      if (index_.quarter_turns() == 0) return take(rgb.data, rgb.stride, slots);
      turn_upright(rgb.data, rgb.stride, width, height, index_.quarter_turns(), upright_);
      return take(upright_.data(), static_cast<ptrdiff_t>(index_.upright_width()) * 3, slots);
    };
  };

  for (size_t begin = 0; begin < wanted.size();) {
    const int64_t key = index_.keyframe_at_or_before(wanted[begin].first);
    if (key < 0) return frame_error(wanted[begin].first, "no keyframe at or before it");
    int64_t next_key = wanted[begin].first + 1;  // the group ends before the next keyframe
    while (next_key < count && !index_.keyframe[static_cast<size_t>(next_key)]) ++next_key;
    size_t end = begin + 1;
    while (end < wanted.size() && wanted[end].first < next_key) ++end;
    STOKER_RETURN_IF_ERROR(decode_run(key, wanted[end - 1].first, take_run(begin, end)));
    for (size_t w = begin; w < end; ++w)
      if (!filled[wanted[w].second])
        return frame_error(wanted[w].first, "did not decode (the file ends or is corrupt)");
    begin = end;
  }
  return Status::ok();
}

Status VideoFrameDecoder::decode(const std::vector<int64_t>& indices, FrameLayout layout,
                                 std::vector<uint8_t>& out) {
  const size_t width = static_cast<size_t>(index_.upright_width());
  const size_t height = static_cast<size_t>(index_.upright_height());
  const size_t plane = width * height, row = width * 3;
  out.resize(indices.size() * plane * 3);
  auto place = [&](const uint8_t* rgb, ptrdiff_t stride, const std::vector<size_t>& slots) {
    for (const size_t slot : slots) {
      uint8_t* const destination = out.data() + slot * plane * 3;
      for (size_t y = 0; y < height; ++y) {
        const uint8_t* const from = rgb + static_cast<ptrdiff_t>(y) * stride;
        if (layout == FrameLayout::kNHWC) {
          std::memcpy(destination + y * row, from, row);
          continue;
        }
        for (size_t x = 0; x < width; ++x)
          for (size_t c = 0; c < 3; ++c) destination[c * plane + y * width + x] = from[x * 3 + c];
      }
    }
    return Status::ok();
  };
  return decode_each(indices, place);
}

Status decode_frames_at(const VideoIndex& index, const std::vector<int64_t>& indices,
                        FrameLayout layout, std::vector<uint8_t>& out) {
  STOKER_ASSIGN_OR_RETURN(VideoFrameDecoder decoder, VideoFrameDecoder::open(index));
  return decoder.decode(indices, layout, out);
}

}  // namespace stoker::video
