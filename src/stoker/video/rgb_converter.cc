#include "stoker/video/rgb_converter.h"

#include <cstring>
#include <vector>

extern "C" {
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavutil/cpu.h>
#include <libavutil/opt.h>
}

namespace stoker::video {

namespace {

Status conversion_error(const std::string& path, const std::string& what, int rc) {
  return Status(StatusCode::kInternal,
                video_named(path) + ": RGB conversion: " + what + " (" + av_error_text(rc) + ")");
}

// What a conversion's contexts were made for.
struct Shape {
  int width = 0, height = 0, format = -1, colorspace = -1;
  AVRational aspect{0, 1};
  AVRational time_base{0, 1};
  bool operator==(const Shape& o) const {
    return width == o.width && height == o.height && format == o.format &&
           colorspace == o.colorspace && av_cmp_q(aspect, o.aspect) == 0 &&
           av_cmp_q(time_base, o.time_base) == 0;
  }
};

// A thread's conversion contexts: torchcodec's swscale context, the swscale context that stands
// in for the filtergraph's scale filter, or a filtergraph and its ends.
class Contexts {
 public:
  Status convert_swscale(const std::string& path, const AVFrame& frame, uint8_t* out,
                         ptrdiff_t stride);
  Result<RgbRows> convert_as_scale_filter(const std::string& path, const AVFrame& frame);
  Status convert_filtergraph(const std::string& path, AVRational time_base, const AVFrame& frame,
                             uint8_t* out, ptrdiff_t stride);

 private:
  Status build_filtergraph(const std::string& path, AVRational time_base, const AVFrame& frame);
  Status filter(const std::string& path, const AVFrame& frame, uint8_t* out, ptrdiff_t stride);

  SwsContextPtr sws_;
  Shape sws_shape_;
  SwsContextPtr scale_;  // as the filtergraph's scale filter makes it
  Shape scale_shape_;
  std::vector<uint8_t> scaled_;  // its output, rows as the filtergraph's frames align them
  FilterGraphPtr graph_;
  AVFilterContext* source_ = nullptr;  // owned by graph_
  AVFilterContext* sink_ = nullptr;    // owned by graph_
  Shape graph_shape_;
  FramePtr filtered_;
};

// The formats whose conversion by convert_as_scale_filter was checked equal to the
// filtergraph's, byte for byte (ranges, colour spaces, chroma sitings, interlacing, 10 bits).
bool scale_filter_checked(int format) {
  switch (format) {
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_YUVJ420P:
    case AV_PIX_FMT_YUV422P:
    case AV_PIX_FMT_YUV444P:
    case AV_PIX_FMT_YUV420P10LE:
      return true;
    default:
      return false;
  }
}

// Gives `context` the frame's colour space's coefficients for input and output, keeping the
// ranges it has, but the source's the frame's own where `frame_range` and the frame says it.
Status use_frame_colour_space(SwsContext* context, const AVFrame& frame, bool frame_range,
                              const std::string& path) {
  int *inverse = nullptr, *table = nullptr;
  int source_full = 0, destination_full = 0, brightness = 0, contrast = 0, saturation = 0;
  if (sws_getColorspaceDetails(context, &inverse, &source_full, &table, &destination_full,
                               &brightness, &contrast, &saturation) < 0)
    return conversion_error(path, "no colour space details", AVERROR(EINVAL));
  const int* coefficients = sws_getCoefficients(frame.colorspace);
  if (frame_range && frame.color_range != AVCOL_RANGE_UNSPECIFIED)
    source_full = frame.color_range == AVCOL_RANGE_JPEG;
  if (sws_setColorspaceDetails(context, coefficients, source_full, coefficients, destination_full,
                               brightness, contrast, saturation) < 0)
    return conversion_error(path, "colour space details refused", AVERROR(EINVAL));
  return Status::ok();
}

}  // namespace

Result<RgbRows> RgbConverter::convert(const AVFrame& frame, uint8_t* out, ptrdiff_t stride) {
  thread_local Contexts contexts;
  // torchcodec's choice: swscale needs widths that are multiples of 32.
  if (frame.width % 32 == 0) {
    STOKER_RETURN_IF_ERROR(contexts.convert_swscale(path_, frame, out, stride));
  } else if (scale_filter_checked(frame.format)) {
    return contexts.convert_as_scale_filter(path_, frame);
  } else {
    STOKER_RETURN_IF_ERROR(contexts.convert_filtergraph(path_, time_base_, frame, out, stride));
  }
  return RgbRows{out, stride};
}

Status Contexts::convert_swscale(const std::string& path, const AVFrame& frame, uint8_t* out,
                                 ptrdiff_t stride) {
  const Shape shape{frame.width, frame.height, frame.format, frame.colorspace};
  if (!sws_ || !(shape == sws_shape_)) {
    sws_.reset(sws_getContext(frame.width, frame.height, static_cast<AVPixelFormat>(frame.format),
                              frame.width, frame.height, AV_PIX_FMT_RGB24, 0, nullptr, nullptr,
                              nullptr));
    sws_shape_ = Shape{};
    if (!sws_) return conversion_error(path, "no swscale context", AVERROR(EINVAL));
    STOKER_RETURN_IF_ERROR(use_frame_colour_space(sws_.get(), frame, false, path));
    sws_shape_ = shape;
  }
  uint8_t* planes[4] = {out, nullptr, nullptr, nullptr};
  const int strides[4] = {static_cast<int>(stride), 0, 0, 0};
  const int rows =
      sws_scale(sws_.get(), frame.data, frame.linesize, 0, frame.height, planes, strides);
  if (rows != frame.height) return conversion_error(path, "swscale stopped early", rows);
  return Status::ok();
}

// vf_scale's conversion (FFmpeg 5.1's, as a filtergraph inserts it): a context made with no
// scaler flags, given per frame the frame's colour space's coefficients for input and output
// and its range where it has one; its output rows aligned as the filtergraph's frame pool
// aligns them (which decides swscale's code path, and so its rounding).
Result<RgbRows> Contexts::convert_as_scale_filter(const std::string& path, const AVFrame& frame) {
  const Shape shape{frame.width, frame.height, frame.format};
  if (!scale_ || !(shape == scale_shape_)) {
    scale_shape_ = Shape{};
    scale_.reset(sws_getContext(frame.width, frame.height, static_cast<AVPixelFormat>(frame.format),
                                frame.width, frame.height, AV_PIX_FMT_RGB24, 0, nullptr, nullptr,
                                nullptr));
    if (!scale_) return conversion_error(path, "no swscale context", AVERROR(EINVAL));
    scale_shape_ = shape;
  }
  STOKER_RETURN_IF_ERROR(use_frame_colour_space(scale_.get(), frame, true, path));
  // The frame pool's row: the frame's width rounded up to the first power of two that makes
  // 3 * width a multiple of the CPU's largest alignment.
  const int align = static_cast<int>(av_cpu_max_align());
  int row = frame.width * 3;
  for (int a = 1; a <= align && row % align != 0; a *= 2) row = FFALIGN(frame.width, a) * 3;
  scaled_.resize(static_cast<size_t>(row) * frame.height + align);
  const uintptr_t start = reinterpret_cast<uintptr_t>(scaled_.data());
  uint8_t* const aligned = scaled_.data() + (align - start % align) % align;
  uint8_t* planes[4] = {aligned, nullptr, nullptr, nullptr};
  const int strides[4] = {row, 0, 0, 0};
  const int rows =
      sws_scale(scale_.get(), frame.data, frame.linesize, 0, frame.height, planes, strides);
  if (rows != frame.height) return conversion_error(path, "swscale stopped early", rows);
  return RgbRows{aligned, row};
}

Status Contexts::build_filtergraph(const std::string& path, AVRational time_base,
                                   const AVFrame& frame) {
  graph_.reset(avfilter_graph_alloc());
  if (!graph_) return conversion_error(path, "no filtergraph", AVERROR(ENOMEM));
  graph_->nb_threads = 1;
  AVBufferSrcParameters* parameters = av_buffersrc_parameters_alloc();
  if (!parameters) return conversion_error(path, "no buffer parameters", AVERROR(ENOMEM));
  parameters->format = frame.format;
  parameters->width = frame.width;
  parameters->height = frame.height;
  parameters->sample_aspect_ratio = frame.sample_aspect_ratio;
  parameters->time_base = time_base;
  source_ = avfilter_graph_alloc_filter(graph_.get(), avfilter_get_by_name("buffer"), "in");
  int rc = source_ ? av_buffersrc_parameters_set(source_, parameters) : AVERROR(ENOMEM);
  av_free(parameters);
  if (rc >= 0) rc = avfilter_init_str(source_, nullptr);
  if (rc < 0) return conversion_error(path, "filtergraph source", rc);
  rc = avfilter_graph_create_filter(&sink_, avfilter_get_by_name("buffersink"), "out", nullptr,
                                    nullptr, graph_.get());
  const AVPixelFormat formats[] = {AV_PIX_FMT_RGB24, AV_PIX_FMT_NONE};
  if (rc >= 0)
    rc = av_opt_set_int_list(sink_, "pix_fmts", formats, AV_PIX_FMT_NONE, AV_OPT_SEARCH_CHILDREN);
  if (rc < 0) return conversion_error(path, "filtergraph sink", rc);
  FilterInOutPtr outputs(avfilter_inout_alloc());
  FilterInOutPtr inputs(avfilter_inout_alloc());
  if (!outputs || !inputs) return conversion_error(path, "filtergraph ends", AVERROR(ENOMEM));
  outputs->name = av_strdup("in");
  outputs->filter_ctx = source_;
  inputs->name = av_strdup("out");
  inputs->filter_ctx = sink_;
  AVFilterInOut* in = inputs.release();
  AVFilterInOut* out = outputs.release();
  rc = avfilter_graph_parse_ptr(graph_.get(), "copy", &in, &out, nullptr);
  inputs.reset(in);
  outputs.reset(out);
  if (rc >= 0) rc = avfilter_graph_config(graph_.get(), nullptr);
  if (rc < 0) return conversion_error(path, "filtergraph configuration", rc);
  if (!filtered_) filtered_.reset(av_frame_alloc());
  if (!filtered_) return conversion_error(path, "no frame", AVERROR(ENOMEM));
  return Status::ok();
}

Status Contexts::convert_filtergraph(const std::string& path, AVRational time_base,
                                     const AVFrame& frame, uint8_t* out, ptrdiff_t stride) {
  const Shape shape{frame.width, frame.height, frame.format, -1, frame.sample_aspect_ratio,
                    time_base};
  if (!graph_ || !(shape == graph_shape_)) {
    graph_shape_ = Shape{};
    STOKER_RETURN_IF_ERROR(build_filtergraph(path, time_base, frame));
    graph_shape_ = shape;
  }
  const Status filtered = filter(path, frame, out, stride);
  if (!filtered.is_ok()) graph_shape_ = Shape{};  // what it holds is unknown: made anew
  return filtered;
}

Status Contexts::filter(const std::string& path, const AVFrame& frame, uint8_t* out,
                        ptrdiff_t stride) {
  // The source takes a reference of its own: the caller's frame stays as it is.
  int rc = av_buffersrc_write_frame(source_, &frame);
  if (rc < 0) return conversion_error(path, "filtergraph input", rc);
  av_frame_unref(filtered_.get());
  rc = av_buffersink_get_frame(sink_, filtered_.get());
  if (rc < 0) return conversion_error(path, "filtergraph output", rc);
  const AVFrame& rgb = *filtered_;
  if (rgb.width != frame.width || rgb.height != frame.height || rgb.format != AV_PIX_FMT_RGB24)
    return conversion_error(path, "filtergraph changed the frame's size", AVERROR_BUG);
  const size_t row = static_cast<size_t>(rgb.width) * 3;
  for (int y = 0; y < rgb.height; ++y)
    std::memcpy(out + y * stride, rgb.data[0] + static_cast<ptrdiff_t>(y) * rgb.linesize[0], row);
  av_frame_unref(filtered_.get());
  return Status::ok();
}

}  // namespace stoker::video
