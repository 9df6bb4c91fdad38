#pragma once
// torch's antialiased resize of a float32 image (torch.nn.functional.interpolate(antialias=True)
// on the CPU), as torchvision v1 resizes a uint8 tensor (and v2 where torch has no uint8 kernel
// for it): the image converted to float32, resized, (bicubic: clamped to [0, 255]) rounded half
// to even back to uint8.
//
// The arithmetic is torch's, float for float (ATen's UpSampleKernel.cpp as the PyPI wheel of
// torch 2.11 runs it on x86-64):
//   weights  per axis, in float: scale = in / out, center = scale * (i + 0.5), PIL's bounds
//            and filters (the bicubic's a = -0.5 polynomials with fused multiply-adds), each
//            normalised by their float sum;
//   sums     horizontal pass over the columns first, then vertical over the rows, in float
//            without rounding to uint8 between; an output's n taps t_j * w_j summed in order
//            (TorchFloatSums: which products are rounded before they are added, as each
//            wheel's compiled loop does; stoker.transforms checks which one the installed torch
//            is, test_tensor_resize.py);
//   an axis of the same size is not resampled.
// Slower than resample.h's fixed-point kernels (plain loops): for the recipes that resize a
// tensor, not the default path. Stateless; thread-safe.

#include <cstdint>
#include <vector>

#include "stoker/image/resample.h"
#include "stoker/image/rgb_view.h"
#include "stoker/util/status.h"

namespace stoker::image {

// How a torch wheel's float resize adds an output's n taps, the first product rounded either way.
enum class TorchFloatSums {
  kUnrolled,  // torch 2.11's: the first 1 + 4 floor((n - 1) / 4) as rounded products added one
              // by one, the rest by fused multiply-adds (its loop unrolled by 4)
  kFused,     // torch 2.4's: every product after the first by a fused multiply-add
};

// The window's values of the whole in_width x in_height image resized to out_width x out_height
// with `filter`, float32 as torch computes them (adding taps as `sums` says), interleaved RGB rows
// (window.width * 3 values each) in `out`. `src` holds the image's pixels from (src_x, src_y) on
// and must cover every source pixel the window reads. kInvalidArgument, nothing written, for sizes
// below 1, a window outside the output or a source that does not cover what it reads.
Status torch_float_resize(const RgbView& src, int src_x, int src_y, int in_width, int in_height,
                          int out_width, int out_height, const ResampleWindow& window,
                          ResampleFilter filter, std::vector<float>& out,
                          TorchFloatSums sums = TorchFloatSums::kUnrolled);

// torchvision's return of a float32 resize to uint8: a bicubic's values clamped to [0, 255]
// first, then rounded half to even.
void round_to_uint8(const std::vector<float>& values, ResampleFilter filter,
                    std::vector<uint8_t>& out);

}  // namespace stoker::image
