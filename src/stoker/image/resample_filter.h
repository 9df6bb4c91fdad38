#pragma once
// PIL's resampling filter for one axis (Pillow 9.4 libImaging/Resample.c, precompute_coeffs and
// normalize_coeffs_8bpc with the BILINEAR or BICUBIC filter): for each output position, the first
// source index and the fixed-point weights of the source pixels it reads. Shared by the scalar
// and the SIMD resamplers, so both read the same taps.
//
// torch's antialiased uint8 resize (torchvision v2's on uint8 tensors; ATen's UpSampleKernel.cpp,
// _compute_indices_int16_weights_aa) computes the same double weights and rounds them the same
// way, with fewer fractional bits: as many as keep its largest weight in int16
// (torch_precision_bits). The two differ only there.

#include <cstdint>
#include <vector>

namespace stoker::image {

// Fractional bits of the fixed-point weights (PIL's PRECISION_BITS): a weight w is
// round(w * 2^22) away from zero, and a sum s of weight * pixel becomes the pixel value
// clip((s + 2^21) >> 22, 0, 255). With torch's precision p, the same with p for 22.
inline constexpr int kPrecisionBits = 22;

// PIL's filters: the triangle of support 1 (bilinear), and the cubic convolution with a = -0.5
// of support 2 (bicubic, whose weights can be negative), each widened by the downscale factor.
enum class ResampleFilter { kBilinear, kBicubic };

// Output position i reads source indices first[i] .. first[i] + count[i] - 1 with weights
// weights[i * stride + t]; weights[i * stride + t] is 0 for count[i] <= t < stride. The stride
// is even, so a loop may take the taps in pairs (reading one source index past the last).
struct AxisTaps {
  int stride = 0;
  int precision = kPrecisionBits;  // fractional bits of the weights
  std::vector<int32_t> first;
  std::vector<int32_t> count;
  std::vector<int32_t> weights;

  // The source range all outputs read: [first[0], first[n-1] + count[n-1]).
  int source_begin() const { return first.front(); }
  int source_end() const { return first.back() + count.back(); }
};

// Computes the taps that map [in0, in1) of a source axis of `in_size` pixels onto `out_size`
// outputs with `filter`, for the outputs [out_begin, out_end) only (taps index 0 is out_begin's:
// each the same as in the whole axis), with `precision` fractional bits. Preconditions (checked
// by the caller): 0 <= in0 < in1 <= in_size, 0 <= out_begin < out_end <= out_size,
// 1 <= precision <= kPrecisionBits.
void compute_axis_taps(int in_size, double in0, double in1, int out_size, int out_begin,
                       int out_end, ResampleFilter filter, AxisTaps& taps,
                       int precision = kPrecisionBits);

// torch's fractional bits for resizing a whole axis of `in_size` pixels to `out_size` with
// `filter`: the most, up to 22, for which its largest weight w (over every output) keeps
// round(w * 2^bits) below 2^15, int16's limit (14 to 22 with these filters, whose weights stay
// below 2). Preconditions: both sizes >= 1.
int torch_precision_bits(int in_size, int out_size, ResampleFilter filter);

}  // namespace stoker::image
