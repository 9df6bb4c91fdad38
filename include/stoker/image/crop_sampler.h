#pragma once
// Where a sample's pixels come from: torchvision 0.14's crop geometry, for training
// (RandomResizedCrop's sampler) and evaluation (Resize of the shorter side + CenterCrop).
//
// random_resized_crop is RandomResizedCrop.get_params: up to 10 attempts, each drawing
//   area   = W * H * U(scale_min, scale_max)
//   ratio  = exp(U(log ratio_min, log ratio_max))
//   w = round(sqrt(area * ratio)),  h = round(sqrt(area / ratio))   (round half to even)
// and accepting the first with 0 < w <= W and 0 < h <= H, at row U{0..H-h}, column U{0..W-w};
// if none fits, the fallback: the central crop of the whole image clamped to the ratio range
// (w = W, h = round(W / ratio_min) when W/H < ratio_min; h = H, w = round(H * ratio_max) when
// W/H > ratio_max; else the whole image) at ((H-h)/2, (W-w)/2), rounded down. torchvision draws
// in float32 with torch's generator; here the uniforms are CounterRng::next_double (53 bits) and
// the integers CounterRng::uniform_below, so the crops follow the same distribution, not the
// same sequence.
//
// resize_center_crop is Resize(S, max_size) then CenterCrop(cw, ch) on a PIL image: the shorter
// side becomes S and the longer int(S * long / short), or, where that is above max_size, the
// longer max_size and the shorter int(max_size * S / long'); the crop's top-left corner is
// (round((Rh - ch) / 2), round((Rw - cw) / 2)) in the resized image. It is returned as the crop's
// pre-image in the source (a PixelBox) and an output size: resampling that box of the whole
// source to (cw, ch) (resample.h) gives PIL's resize-then-crop pixels. A side of the crop larger
// than the resized image's is torchvision's zero padding: the whole side resampled into the
// middle of the crop, (c - R) // 2 zeros before it.
//
// Pure functions of their arguments (and of the rng's position): thread-safe.

#include "stoker/image/rgb_view.h"
#include "stoker/util/rng.h"
#include "stoker/util/status.h"

namespace stoker::image {

// RandomResizedCrop's parameters, torchvision's defaults.
struct RandomResizedCropParams {
  double scale_min = 0.08;
  double scale_max = 1.0;
  double ratio_min = 3.0 / 4;
  double ratio_max = 4.0 / 3;
};

// Ok when 0 < scale_min <= scale_max and 0 < ratio_min <= ratio_max, all finite; else
// kInvalidArgument naming the bad value.
Status check_random_resized_crop_params(const RandomResizedCropParams& params);

// One crop of a width x height image drawn from `rng` (consumes 2 draws per attempt, 2 more
// (rarely more) for the position of an accepted attempt). `fell_back`, when given, tells whether
// the fallback was taken. kInvalidArgument for an empty image or bad params.
Result<CropRect> random_resized_crop(int width, int height, const RandomResizedCropParams& params,
                                     CounterRng& rng, bool* fell_back = nullptr);

// Resize(resize_size, max_size) + CenterCrop(crop_width, crop_height) of a width x height image:
// the box to resample from the whole image and the output size, plus the size the image is
// resized to.
struct ResizedCenterCrop {
  PixelBox box;   // the crop's pre-image, in source pixels
  int width = 0;  // output size: the crop's
  int height = 0;
  int resized_width = 0;  // the size Resize gives the whole image
  int resized_height = 0;
  int left = 0;  // where the crop (its inner rectangle) starts in the resized image
  int top = 0;
  // Where the crop is larger than the resized image: the box resampled into the inner_width x
  // inner_height rectangle at (pad_left, pad_top) of the output, zeros around it (else the
  // whole output).
  int pad_left = 0;
  int pad_top = 0;
  int inner_width = 0;
  int inner_height = 0;
};

// kInvalidArgument for an empty image, a size below 1, or a max_size (0: none) not above
// resize_size (torchvision's rule).
Result<ResizedCenterCrop> resize_center_crop(int width, int height, int resize_size, int crop_width,
                                             int crop_height, int max_size = 0);

// Python's round() of a double to an integral double: the nearest, ties to even.
double round_half_even(double x);

}  // namespace stoker::image
