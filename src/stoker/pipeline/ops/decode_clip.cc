// decode_clip: a video field (the file's bytes: mp4, mkv, webm, avi) made into clips, as
// torchcodec 0.17's index samplers pick them and torchvision v2's transforms change a uint8
// Video [T, C, H, W]:
//   1. the clips' frames (video/clip_sampler.h: num_clips, num_frames_per_clip,
//      num_indices_between_frames, the sampling range and policy; or by time,
//      seconds_between_frames, seconds_between_clip_starts and the range in seconds), the random
//      starts drawn first from the sample's stream, one uniform_below (one next_double by time)
//      per clip; or, sampler "video_clips", no draw: the sample's clip of those its dataset
//      enumerates (a VideoFolder with frames_per_clip: SourceContext::sample_parts, its clip
//      SampleInput::part; video/video_clips.h, torchvision's VideoClips);
//   2. decoded once per GOP, converted to RGB and turned upright as torchcodec does (video/), so
//      the frames are get_frames_at's byte for byte (the video's index kept for the thread's
//      next clip of it and in the cache folder, SourceContext::cache_dir: video/video_cache.h);
//   3. Resize(resize) of every frame ([s]: the shorter side to s and the longer to
//      int(s * long / short); [h, w]; []: none) with torch's antialiased bilinear kernel of a
//      uint8 tensor (v2's), then a crop of `crop` ([s] or [h, w]): RandomCrop's (top =
//      uniform_below(H - h + 1), then left = uniform_below(W - w + 1), two draws) or
//      CenterCrop's (round half to even of the margins' halves); or, with crop_mode "resized"
//      and no resize, RandomResizedCrop(crop, scale, ratio)'s (image/crop_sampler.h's draws): its
//      box cut from each frame, then resized to `crop` by that kernel; then
//      RandomHorizontalFlip(flip)
//      (one draw, next_double() < flip) — one draw of each for the whole sample, as v2 draws
//      once per Video; or, draws "clip", each clip's own, clip after clip (as v2 transforming
//      each clip on its own, the way torchvision's video reference transforms its samples);
//   4. uint8, or float32 as ToDtype(float32, scale=True) + Normalize(mean, std) give it
//      (unit_scale "multiply"; "divide": v1's ConvertImageDtype), bit for bit (the resampler's
//      fused write, image/float_pixel.h);
//   5. laid out [T, C, h, w] ("TCHW") or [C, T, h, w] ("CTHW", torchvision's video models' input),
//      with a leading [num_clips] where there are several clips. Regular timestamps give as many
//      clips as fit the video, [K, ...] with K up to num_clips (a variable sample; more is an
//      error naming both).
// The clip's size must be fixed (a crop, or resize [h, w]). A video that does not open or
// decode, a frame above max_pixels, a clip that cannot be drawn (too short a video under policy
// "error", a crop larger than the resized frame): a one-line error naming the field, the frame
// or the size; the engine names the record.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "stoker/image/crop_sampler.h"
#include "stoker/image/resample.h"
#include "stoker/image/resample_filter.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/video_frame_counts.h"
#include "stoker/store/record_view.h"
#include "stoker/util/cancel_scope.h"
#include "stoker/video/clip_sampler.h"
#include "stoker/video/clip_sampler_params.h"
#include "stoker/video/frame_decoder.h"
#include "stoker/video/video_cache.h"
#include "stoker/video/video_check.h"

namespace stoker::ops {
namespace {

struct ClipGeometry {
  std::vector<double> resize;           // [], [s] or [h, w]
  int crop_height = 0, crop_width = 0;  // 0: no crop
  bool center = false;
  bool resized = false;                   // RandomResizedCrop's crop, resized to the crop's size
  image::RandomResizedCropParams scales;  // its scale and ratio
  double flip = 0;
  bool per_clip = false;  // draws "clip": each clip its own crop and flip
};

// A sample's draws: what each frame is resampled into, from which box of the upright frame.
struct ClipDraw {
  image::ResampleOutput out;
  image::CropRect from;
};

// torchvision's _compute_resized_output_size of a width x height frame: (width, height).
std::pair<int, int> clip_resized_size(const std::vector<double>& resize, int width, int height) {
  if (resize.empty()) return {width, height};
  if (resize.size() == 2) return {static_cast<int>(resize[1]), static_cast<int>(resize[0])};
  const int size = static_cast<int>(resize[0]);
  const int shorter = std::min(width, height), longer = std::max(width, height);
  const int resized_longer =
      static_cast<int>(static_cast<double>(int64_t{size} * longer) / shorter);
  return width <= height ? std::make_pair(size, resized_longer)
                         : std::make_pair(resized_longer, size);
}

class DecodeClip : public Transform {
 public:
  DecodeClip(int field, video::ClipSampler sampler, ClipGeometry geometry,
             image::ResampleOutput out, bool channels_first, int64_t max_pixels, int threads,
             std::string cache_dir)
      : field_(field),
        sampler_(sampler),
        geometry_(std::move(geometry)),
        out_(out),
        channels_first_(channels_first),
        max_pixels_(max_pixels),
        threads_(threads),
        cache_dir_(std::move(cache_dir)) {}

  DType dtype() const override {
    return out_.type == image::ResampleOutput::Type::kUint8 ? DType::kUint8 : DType::kFloat32;
  }

  std::vector<int64_t> sample_shape() const override {
    return shape_of(sampler_.num_clips, out_.height, out_.width, sampler_.num_clips > 1);
  }

  // A sample of `clips` clips of h x w frames: [K?, T, 3, h, w] or [K?, 3, T, h, w], K there
  // where `leading`.
  std::vector<int64_t> shape_of(int64_t clips, int64_t h, int64_t w, bool leading) const {
    const int64_t t = sampler_.clip_length();
    std::vector<int64_t> shape =
        channels_first_ ? std::vector<int64_t>{3, t, h, w} : std::vector<int64_t>{t, 3, h, w};
    if (leading) shape.insert(shape.begin(), clips);
    return shape;
  }

  int64_t max_clips() const { return sampler_.num_clips; }

  Status apply(const SampleInput& input, uint8_t* slot) const override {
    int64_t clips = 0, height = 0, width = 0;
    return write(input, slot, clips, height, width);
  }

  // Writes the sample's clips C-contiguous at `slot` and says how many there are and their
  // frames' size, which is out_'s but for clips of their frames' own size (capacity: at most
  // out_'s). Errors name the video "the video": the engine names the field and record.
  Status write(const SampleInput& input, uint8_t* slot, int64_t& clips, int64_t& height,
               int64_t& width) const {
    STOKER_ASSIGN_OR_RETURN(ByteSpan bytes, variable_field(*input.schema, input.record, field_));
    const CancelScope reads_end_when_cancelled(input.cancelled);  // a remote video's
    const std::string video_name;                                 // the record's
    STOKER_ASSIGN_OR_RETURN(video::IndexedVideo opened,
                            video::open_indexed_video(bytes, cache_dir_));
    const video::VideoIndex& index = *opened.index;
    STOKER_RETURN_IF_ERROR(video::check_frame_pixels(index.width, index.height, max_pixels_));
    CounterRng rng = input.rng();
    STOKER_ASSIGN_OR_RETURN(std::vector<int64_t> frames,
                            video::clip_frame_indices(sampler_, index, rng, video_name, input.part,
                                                      sampler_.first_clip_of(input.index)));
    clips = static_cast<int64_t>(frames.size()) / sampler_.clip_length();
    std::vector<ClipDraw> draws;  // the sample's, or each clip's
    for (int64_t d = 0; d < (geometry_.per_clip ? clips : 1); ++d) {
      STOKER_ASSIGN_OR_RETURN(ClipDraw draw, draw_output(index, rng));
      draws.push_back(draw);
    }
    const image::ResampleOutput& out = draws[0].out;  // every draw's size
    STOKER_ASSIGN_OR_RETURN(
        video::VideoFrameDecoder decoder,
        video::VideoFrameDecoder::open(std::move(opened.file), index, threads_));

    const size_t element = dtype_size(dtype());
    // A frame's sample is the crop's (the window's; `out` is the resize's).
    width = out.window.width > 0 ? out.window.width : out.width;
    height = out.window.width > 0 ? out.window.height : out.height;
    if (width > out_.width || height > out_.height)
      return invalid_argument(fmt::format("its {}x{} frames are larger than capacity [{}, {}]",
                                          width, height, out_.height, out_.width));
    const size_t plane = static_cast<size_t>(width) * static_cast<size_t>(height);
    const size_t frame_bytes = 3 * plane * element;
    const int64_t per_clip = sampler_.clip_length();
    thread_local image::Resampler resampler;
    thread_local std::vector<uint8_t> chw;
    if (channels_first_) chw.resize(frame_bytes);
    const Status decoded = decoder.decode_each(
        frames, [&](const uint8_t* rgb, ptrdiff_t stride, const std::vector<size_t>& slots) {
          // Each draw's resample of the frame, made for the first slot that takes it: in place
          // for [K, T, C, h, w] (copied from there to the others), in `chw` for [K, C, T, h, w].
          size_t drawn = draws.size(), first = 0;
          for (const size_t frame_slot : slots) {
            const size_t clip = frame_slot / static_cast<size_t>(per_clip);
            const size_t d = geometry_.per_clip ? clip : 0;
            uint8_t* const target = slot + frame_slot * frame_bytes;
            if (d != drawn) {
              // The box's pixels as an image of their own (torch crops, then resizes the crop).
              const image::CropRect& from = draws[d].from;
              const image::RgbView view{rgb + from.y * stride + from.x * 3, from.width, from.height,
                                        stride};
              const image::PixelBox whole{0.0, 0.0, 0.0 + from.width, 0.0 + from.height};
              STOKER_RETURN_IF_ERROR(resampler.resample(view, whole, draws[d].out,
                                                        channels_first_ ? chw.data() : target));
              drawn = d;
              first = frame_slot;
            } else if (!channels_first_) {
              std::memcpy(target, slot + first * frame_bytes, frame_bytes);
            }
            if (!channels_first_) continue;
            // [K, C, T, h, w]: each channel's plane to its place in its clip.
            const size_t t = frame_slot % static_cast<size_t>(per_clip);
            uint8_t* const clip_start = slot + clip * static_cast<size_t>(per_clip) * frame_bytes;
            for (size_t c = 0; c < 3; ++c)
              std::memcpy(clip_start + (c * static_cast<size_t>(per_clip) + t) * plane * element,
                          chw.data() + c * plane * element, plane * element);
          }
          return Status::ok();
        });
    if (decoded.is_ok() && input.counters != nullptr) {
      input.counters->video_frames_decoded += decoder.frames_decoded();
      input.counters->video_frames_delivered += static_cast<int64_t>(frames.size());
    }
    return decoded;
  }

 private:
  // The resize, the crop's place (drawn for a random crop) and the flip of this sample.
  Result<ClipDraw> draw_output(const video::VideoIndex& index, CounterRng& rng) const {
    const int width = index.upright_width(), height = index.upright_height();
    ClipDraw draw{out_, image::CropRect{0, 0, width, height}};
    image::ResampleOutput& out = draw.out;
    if (geometry_.resized) {
      STOKER_ASSIGN_OR_RETURN(draw.from,
                              image::random_resized_crop(width, height, geometry_.scales, rng));
    } else {
      const auto [resized_width, resized_height] =
          clip_resized_size(geometry_.resize, width, height);
      if (resized_width < 1 || resized_height < 1)
        return invalid_argument(fmt::format("its {}x{} frames resize to nothing", width, height));
      const int crop_width = geometry_.crop_width ? geometry_.crop_width : resized_width;
      const int crop_height = geometry_.crop_height ? geometry_.crop_height : resized_height;
      if (crop_width > resized_width || crop_height > resized_height)
        return invalid_argument(
            fmt::format("the crop {}x{} is larger than its frames resized, {}x{}", crop_width,
                        crop_height, resized_width, resized_height));
      int top = 0, left = 0;
      if (geometry_.center) {
        top = static_cast<int>(std::nearbyint((resized_height - crop_height) / 2.0));
        left = static_cast<int>(std::nearbyint((resized_width - crop_width) / 2.0));
      } else {
        top = static_cast<int>(
            rng.uniform_below(static_cast<uint64_t>(resized_height - crop_height + 1)));
        left = static_cast<int>(
            rng.uniform_below(static_cast<uint64_t>(resized_width - crop_width + 1)));
      }
      out.width = resized_width;
      out.height = resized_height;
      out.window = image::ResampleWindow{left, top, crop_width, crop_height};
    }
    out.flip_horizontal = rng.next_double() < geometry_.flip;
    out.precision_x = image::torch_precision_bits(draw.from.width, out.width, out.filter);
    out.precision_y = image::torch_precision_bits(draw.from.height, out.height, out.filter);
    return draw;
  }

  const int field_;
  const video::ClipSampler sampler_;
  const ClipGeometry geometry_;
  const image::ResampleOutput out_;  // the output's size, type and normalisation
  const bool channels_first_;
  const int64_t max_pixels_;
  const int threads_;
  const std::string cache_dir_;
};

// Clips that vary per sample: regular timestamps' (as many as fit each video, up to
// num_clips: [K, ...]), or of their frames' own size (up to capacity).
class DecodeVariableClips : public VariableTransform {
 public:
  DecodeVariableClips(std::shared_ptr<const DecodeClip> clips, bool counted)
      : clips_(std::move(clips)), counted_(counted) {}
  DType dtype() const override { return clips_->dtype(); }
  std::vector<int64_t> sample_shape() const override {
    const std::vector<int64_t> fixed = clips_->sample_shape();
    return clips_->shape_of(clips_->max_clips(), fixed.end()[-2], fixed.end()[-1], leading());
  }
  Status apply_sized(const SampleInput& input, uint8_t* slot, int64_t* shape) const override {
    int64_t clips = 0, height = 0, width = 0;
    STOKER_RETURN_IF_ERROR(clips_->write(input, slot, clips, height, width));
    const std::vector<int64_t> got = clips_->shape_of(clips, height, width, leading());
    std::copy(got.begin(), got.end(), shape);
    return Status::ok();
  }

 private:
  bool leading() const { return counted_ || clips_->max_clips() > 1; }

  const std::shared_ptr<const DecodeClip> clips_;
  const bool counted_;  // regular timestamps: the clips counted per sample
};

// A size parameter's (height, width): [] none, [s] square, [h, w].
std::pair<int, int> clip_size_pair(const std::vector<double>& size) {
  if (size.empty()) return {0, 0};
  const int h = static_cast<int>(size[0]);
  return {h, size.size() == 2 ? static_cast<int>(size[1]) : h};
}

}  // namespace

OpSpec decode_clip() {
  OpSpec op;
  op.name = "decode_clip";
  op.role = OpRole::kSource;
  op.python_class = "DecodeClip";
  op.output = SampleType{Layout::kClip, DType::kUint8, false};
  op.backend = OpBackend::kTensor;
  op.doc =
      "Decodes clips of a video field (its file's bytes) at torchcodec's sampled frame indices "
      "and resizes, crops, flips and normalises them as torchvision v2 does a uint8 Video: "
      "[T, 3, h, w] (or [3, T, h, w]; a leading [num_clips] for several)";
  const double side = image::kMaxResampleOutputSide;
  op.params = video::clip_sampler_params();
  const std::vector<ParamSpec> geometry_params = {
      ParamSpec::reals("resize", {}, "[s]: the shorter side to s; [h, w]; []: no resize", 0, 2)
          .in(1, side),
      ParamSpec::reals("crop", {}, "the crop's [s] or [h, w]; []: none", 0, 2).in(1, side),
      ParamSpec::choice("crop_mode", "random", {"random", "center", "resized"},
                        "RandomCrop's or CenterCrop's place, or RandomResizedCrop's box (resized "
                        "to crop; no resize before it)"),
      ParamSpec::reals("scale", {0.08, 1.0}, "RandomResizedCrop's range of the box's area", 2, 2),
      ParamSpec::reals("ratio", {3.0 / 4, 4.0 / 3}, "RandomResizedCrop's range of its aspect ratio",
                       2, 2),
      ParamSpec::real("flip", 0.0, "RandomHorizontalFlip's probability").in(0, 1),
      ParamSpec::choice("draws", "sample", {"sample", "clip"},
                        "one crop and flip for all the sample's clips (v2's on one Video), or "
                        "each clip its own"),
      ParamSpec::choice("dtype", "uint8", {"uint8", "float32"},
                        "uint8, or float32 scaled to [0, 1] and normalised by mean and std"),
      ParamSpec::choice("unit_scale", "multiply", {"multiply", "divide"},
                        "float32: x * float32(1 / 255) (v2's ToDtype(float32, scale=True)) or x "
                        "/ 255 (v1's ConvertImageDtype)"),
      ParamSpec::reals("mean", {0.0, 0.0, 0.0}, "per-channel mean, in [0, 1] units", 3, 3),
      ParamSpec::reals("std", {1.0, 1.0, 1.0}, "per-channel standard deviation, non-zero", 3, 3),
      ParamSpec::choice("layout", "TCHW", {"TCHW", "CTHW"},
                        "a clip's dimensions: frames first, or channels first"),
      ParamSpec::integer("max_pixels", video::kDefaultMaxFramePixels,
                         "the largest frame (width x height) decoded; larger is an error")
          .in(1, int64_t{1} << 30),
      ParamSpec::integer("threads", 1,
                         "each decoder's threads (0: FFmpeg's choice; 1 gives the most clips per "
                         "core, docs/BENCHMARKS.md)")
          .in(0, 64),
      ParamSpec::reals("capacity", {},
                       "[h, w]: the largest frames of clips of their own size (no crop, no "
                       "resize [h, w]), which come as a list; []: a fixed size is given",
                       0, 2)
          .in(1, side),
  };
  op.params.insert(op.params.end(), geometry_params.begin(), geometry_params.end());
  op.make_source = [](const Params& p,
                      const SourceContext& context) -> Result<std::shared_ptr<const Transform>> {
    const int f = context.schema->find(context.field);
    if (f < 0 || context.schema->fields()[f].is_fixed())
      return invalid_argument(fmt::format(
          "field '{}': decode_clip reads a stored bytes field of video files", context.field));
    Result<video::ClipSampler> sampled =
        video::clip_sampler_from(p, context.sample_parts, context_frame_counts(context, f));
    if (!sampled.is_ok())
      return invalid_argument(
          fmt::format("field '{}': decode_clip: {}", context.field, sampled.status().message()));
    const video::ClipSampler& sampler = sampled.value();
    ClipGeometry geometry;
    geometry.resize = p.reals("resize");
    std::tie(geometry.crop_height, geometry.crop_width) = clip_size_pair(p.reals("crop"));
    geometry.center = p.choice("crop_mode") == "center";
    geometry.resized = p.choice("crop_mode") == "resized";
    geometry.scales = {p.reals("scale")[0], p.reals("scale")[1], p.reals("ratio")[0],
                       p.reals("ratio")[1]};
    if (geometry.resized) {
      Status scales = image::check_random_resized_crop_params(geometry.scales);
      if (!scales.is_ok())
        return invalid_argument(
            fmt::format("field '{}': decode_clip: {}", context.field, scales.message()));
      if (!geometry.resize.empty() || geometry.crop_height == 0)
        return invalid_argument(fmt::format(
            "field '{}': decode_clip's crop_mode \"resized\" (RandomResizedCrop) resizes its box "
            "to crop: give crop, and no resize",
            context.field));
    }
    geometry.flip = p.real("flip");
    geometry.per_clip = p.choice("draws") == "clip";
    // The clip's frame size: the crop's, else resize [h, w]'s.
    std::pair<int, int> size =
        clip_size_pair(geometry.resize.size() == 2 ? geometry.resize : std::vector<double>{});
    if (geometry.crop_height > 0) size = {geometry.crop_height, geometry.crop_width};
    const bool own_size = size.first == 0;
    if (own_size) size = clip_size_pair(p.reals("capacity"));
    const int height = size.first, width = size.second;
    if (height == 0)
      return invalid_argument(fmt::format(
          "field '{}': decode_clip's clips need a fixed size (give crop, or resize [h, w]) or, "
          "for clips of their frames' own size, a capacity [h, w]",
          context.field));
    image::ResampleOutput out;
    out.width = width;
    out.height = height;
    if (p.choice("dtype") == "uint8") {
      out.type = image::ResampleOutput::Type::kUint8;
    } else {
      out.type = image::ResampleOutput::Type::kFloat32;
      out.unit = image::unit_scale_named(p.choice("unit_scale"));
      for (int c = 0; c < 3; ++c) {
        out.mean[c] = static_cast<float>(p.reals("mean")[c]);
        out.std[c] = static_cast<float>(p.reals("std")[c]);
        if (!(std::isfinite(out.std[c]) && out.std[c] != 0) || !std::isfinite(out.mean[c]))
          return invalid_argument(
              fmt::format("field '{}': decode_clip's mean and std must be finite, std non-zero",
                          context.field));
      }
    }
    auto clips = std::make_shared<DecodeClip>(
        f, sampler, std::move(geometry), out, p.choice("layout") == "CTHW", p.integer("max_pixels"),
        static_cast<int>(p.integer("threads")), context.cache_dir);
    const bool counted = sampler.starts == video::ClipStarts::kRegularTimestamps;
    if (counted || own_size)
      return std::shared_ptr<const Transform>(
          std::make_shared<DecodeVariableClips>(clips, counted));
    return std::shared_ptr<const Transform>(clips);
  };
  return op;
}

}  // namespace stoker::ops
