#include "stoker/image/resample.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "stoker/image/resample_kernels.h"

namespace stoker::image {
namespace {

std::string box_text(const PixelBox& b) {
  return "(" + std::to_string(b.x0) + ", " + std::to_string(b.y0) + ", " + std::to_string(b.x1) +
         ", " + std::to_string(b.y1) + ")";
}

// `src`'s data only has to be non-null (a stream's rows are not read yet).
Status check(const RgbView& src, const PixelBox& box, const ResampleOutput& out,
             const uint8_t* dst) {
  if (src.data == nullptr || src.width < 1 || src.height < 1 ||
      src.width > kMaxResampleSourceSide || src.height > kMaxResampleSourceSide ||
      src.stride < 3 * static_cast<ptrdiff_t>(src.width))
    return invalid_argument("resample source " + std::to_string(src.width) + "x" +
                            std::to_string(src.height) + " with stride " +
                            std::to_string(src.stride) + " is empty, too large or malformed");
  if (!(std::isfinite(box.x0) && std::isfinite(box.y0) && std::isfinite(box.x1) &&
        std::isfinite(box.y1) && 0 <= box.x0 && box.x0 < box.x1 && box.x1 <= src.width &&
        0 <= box.y0 && box.y0 < box.y1 && box.y1 <= src.height))
    return invalid_argument("resample box " + box_text(box) + " is not a non-empty box inside " +
                            std::to_string(src.width) + "x" + std::to_string(src.height));
  if (out.width < 1 || out.height < 1 || out.width > kMaxResampleOutputSide ||
      out.height > kMaxResampleOutputSide)
    return invalid_argument("resample output size " + std::to_string(out.width) + "x" +
                            std::to_string(out.height) + " is not within 1.." +
                            std::to_string(kMaxResampleOutputSide));
  const ResampleWindow& w = out.window;
  if (w.width != 0 && !(w.x >= 0 && w.y >= 0 && w.width >= 1 && w.height >= 1 &&
                        w.width <= out.width - w.x && w.height <= out.height - w.y))
    return invalid_argument(
        "resample window " + std::to_string(w.width) + "x" + std::to_string(w.height) + " at (" +
        std::to_string(w.x) + ", " + std::to_string(w.y) + ") is not inside the " +
        std::to_string(out.width) + "x" + std::to_string(out.height) + " output");
  if (out.precision_x < 1 || out.precision_x > kPrecisionBits || out.precision_y < 1 ||
      out.precision_y > kPrecisionBits)
    return invalid_argument("resample precision " + std::to_string(out.precision_x) + ", " +
                            std::to_string(out.precision_y) + " is not within 1.." +
                            std::to_string(kPrecisionBits) + " bits");
  if (out.type != ResampleOutput::Type::kFloat32 && out.type != ResampleOutput::Type::kUint8)
    return invalid_argument("resample output type is neither float32 nor uint8");
  for (int c = 0; c < 3; ++c) {
    if (out.type == ResampleOutput::Type::kFloat32 &&
        !(std::isfinite(out.mean[c]) && std::isfinite(out.std[c]) && out.std[c] != 0.0f))
      return invalid_argument("resample mean and std must be finite and std non-zero");
  }
  if (dst == nullptr) return invalid_argument("resample destination is null");
  return Status::ok();
}

}  // namespace

struct Resampler::Scratch {
  AxisTaps horizontal;
  AxisTaps vertical;
  std::vector<uint8_t> rows;    // the scalar kernel's
  std::vector<uint8_t> source;  // the scalar kernel's, for a stream
  SimdScratch simd;
};

Resampler::Resampler(ResampleKernel kernel)
    : kernel_(kernel), scratch_(std::make_unique<Scratch>()) {}

Resampler::~Resampler() = default;

Status Resampler::resample(const RgbView& src, PixelBox box, const ResampleOutput& out,
                           uint8_t* dst) {
  return run(src, nullptr, box, out, dst);
}

Status Resampler::resample(RgbRowSource& src, PixelBox box, const ResampleOutput& out,
                           uint8_t* dst) {
  // The stream's shape as a view, to check it: a non-null pointer standing for rows not read yet.
  static const uint8_t kNotRead = 0;
  const RgbView shape{
      &kNotRead, src.width, src.height,
      static_cast<ptrdiff_t>(src.row_bytes - std::min(src.row_offset, src.row_bytes))};
  return run(shape, &src, box, out, dst);
}

Status Resampler::run(const RgbView& src, RgbRowSource* stream, PixelBox box,
                      const ResampleOutput& out, uint8_t* dst) {
  STOKER_RETURN_IF_ERROR(check(src, box, out, dst));
  Scratch& s = *scratch_;
  const ResampleWindow window =
      out.window.width != 0 ? out.window : ResampleWindow{0, 0, out.width, out.height};
  compute_axis_taps(src.width, box.x0, box.x1, out.width, window.x, window.x + window.width,
                    out.filter, s.horizontal, out.precision_x);
  compute_axis_taps(src.height, box.y0, box.y1, out.height, window.y, window.y + window.height,
                    out.filter, s.vertical, out.precision_y);
  const int64_t rows = s.vertical.source_end() - s.vertical.source_begin();
  if (rows * window.width > kMaxResampleIntermediatePixels)
    return invalid_argument("resampling " + std::to_string(rows) + " source rows to width " +
                            std::to_string(window.width) + " needs an intermediate image over " +
                            std::to_string(kMaxResampleIntermediatePixels) + " pixels");
  ResampleJob job;
  job.src = src;
  job.stream = stream;
  job.horizontal = &s.horizontal;
  job.vertical = &s.vertical;
  job.width = window.width;
  job.height = window.height;
  job.flip = out.flip_horizontal;
  job.to_float = out.type == ResampleOutput::Type::kFloat32;
  job.unit = out.unit;
  for (int c = 0; c < 3; ++c) {
    job.mean[c] = out.mean[c];
    job.std[c] = out.std[c];
  }
  job.dst = dst;
  return kernel_ == ResampleKernel::kSimd ? resample_simd(job, s.simd)
                                          : resample_scalar(job, s.rows, s.source);
}

const char* Resampler::kernel_name() const {
  return kernel_ == ResampleKernel::kSimd ? simd_target_name() : "scalar";
}

}  // namespace stoker::image
