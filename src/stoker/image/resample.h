#pragma once
// The fused sample writer: resize a box of RGB pixels with PIL's antialiased bilinear (or
// bicubic) filter, flip, normalise and write the sample as CHW, in one call.
//
// Semantics are Pillow 9.4's Image.resize(size, BILINEAR or BICUBIC, box) (libImaging/Resample.c),
// bit for bit: the triangle (or cubic) filter with its support widened by max(1, box size / output
// size) (antialiased when downscaling, plain bilinear when upscaling), taps clipped to the source
// and renormalised, coefficients in fixed point with 22 fractional bits, a horizontal pass rounded
// and clipped to uint8, then a vertical pass rounded and clipped to uint8. PIL takes the box in
// float32; boxes that float32 represents exactly (integers, and the halves, quarters, eighths of
// a DCT-scaled decode) give identical pixels. torchvision's RandomResizedCrop on a PIL image
// crops first (pixels outside the crop are not used), so for a training crop pass the crop's
// pixels as `src` and the whole view as `box`.
//
// The resized uint8 value v of channel c becomes, as kFloat32, float_pixel(v, unit, mean[c],
// std[c]): torchvision's float32 (ToTensor or ToDtype, then Normalize) bit for bit, as the
// pipeline's Normalization computes it (float_pixel.h); or stays v as kUint8 (for normalising on
// the device).
//
// With torch's precision (ResampleOutput::precision_x/y, resample_filter.h) the pixels are
// torchvision v2's resize of a uint8 tensor instead (torch's antialiased uint8 kernels).

#include <array>
#include <cstdint>
#include <memory>

#include "stoker/image/float_pixel.h"
#include "stoker/image/resample_filter.h"
#include "stoker/image/rgb_row_source.h"
#include "stoker/image/rgb_view.h"
#include "stoker/util/status.h"

namespace stoker::image {

// A part of the resized image: its columns [x, x + width) and rows [y, y + height), each pixel
// the whole resize's (a resize followed by a crop computes only the crop). Width 0: all of it.
struct ResampleWindow {
  int x = 0, y = 0, width = 0, height = 0;
};

// What one sample becomes: [3, height, width] contiguous, float32 or uint8 (with a window:
// [3, window.height, window.width], the window's columns mirrored by flip_horizontal).
struct ResampleOutput {
  enum class Type { kFloat32, kUint8 };
  int width = 0;
  int height = 0;
  ResampleWindow window;
  ResampleFilter filter = ResampleFilter::kBilinear;
  bool flip_horizontal = false;  // mirror the columns (RandomHorizontalFlip after the resize)
  // Fractional bits of each axis's weights, 1..22: PIL's 22, or torch's (torch_precision_bits of
  // the axis's whole resize) for torchvision v2's uint8 tensor kernels.
  int precision_x = kPrecisionBits;
  int precision_y = kPrecisionBits;
  Type type = Type::kFloat32;
  // kFloat32 only: float_pixel(v, unit, mean[c], std[c]).
  UnitScale unit = UnitScale::kDivide;
  std::array<float, 3> mean{0, 0, 0};
  std::array<float, 3> std{1, 1, 1};
};

// Which implementation runs: the SIMD one (Highway, the best instruction set this CPU has,
// chosen at run time) or the plain C++ reference (the fallback and the tests' oracle). Both
// write identical bytes.
enum class ResampleKernel { kSimd, kScalar };

// Largest output side and source side accepted (beyond them the fixed-point sums could
// overflow, and no sample is that large), and the largest intermediate image (the source rows
// the box reads times the output width, in pixels), which bounds the scratch memory.
inline constexpr int kMaxResampleOutputSide = 1 << 15;
inline constexpr int kMaxResampleSourceSide = 1 << 20;
inline constexpr int64_t kMaxResampleIntermediatePixels = int64_t{1} << 26;

// Resizes boxes into samples; owns its scratch (filter coefficients, intermediate rows), grown
// as needed and reused. Not thread-safe: one per worker thread.
class Resampler {
 public:
  explicit Resampler(ResampleKernel kernel = ResampleKernel::kSimd);
  ~Resampler();
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;

  // Resizes `box` of `src` to out.width x out.height and writes the sample (or its window) at
  // `dst` (3 * width * height elements of out.type; no alignment needed). kInvalidArgument, with
  // nothing written, for a null or empty source, a stride below 3 * width, a box that is not
  // finite, empty or not inside the source, an output size below 1 or above the limits, a window
  // not inside the output, an intermediate image above its limit, a non-finite mean or a zero or
  // non-finite std.
  Status resample(const RgbView& src, PixelBox box, const ResampleOutput& out, uint8_t* dst);

  // The same, from rows read from `src` top to bottom as the resize needs them (all of them are
  // read, so that a decoder finishes): the SIMD kernel keeps only a group of source rows and the
  // vertical filter's reach of resized rows, so a decoded crop is never materialised; the
  // scalar one reads them all first. The same bytes as resample() of the rows read. Errors: as
  // resample()'s, checked before anything is read, and the source's read errors (the sample is
  // then partly written).
  Status resample(RgbRowSource& src, PixelBox box, const ResampleOutput& out, uint8_t* dst);

  // The kernel in use: "scalar", or the instruction set of the SIMD one ("AVX2", "AVX3", ...).
  const char* kernel_name() const;

 private:
  struct Scratch;
  // Either overload's work: `src` is the source, or only its shape when `stream` is set.
  Status run(const RgbView& src, RgbRowSource* stream, PixelBox box, const ResampleOutput& out,
             uint8_t* dst);
  ResampleKernel kernel_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace stoker::image
