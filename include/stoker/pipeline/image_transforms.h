#pragma once
// Field transforms over an encoded-image field (JPEG or PNG bytes, as `stoker convert
// imagefolder` stores them): torchvision's training and evaluation transforms, computed per
// sample on the loader's workers and written straight into the sample's slot of the batch.
//
//   training    RandomResizedCrop(size, scale, ratio) + RandomHorizontalFlip(p) + ToTensor +
//               Normalize(mean, std)
//   evaluation  Resize(resize) + CenterCrop(size) + ToTensor + Normalize(mean, std)
//
// Per sample: the crop is drawn from the sample's own random stream (seed, epoch, index), so
// the same images come out for any worker count; only the crop's rows and iMCU columns are
// decoded (image/decode.h), then one fused pass resizes with PIL's antialiased bilinear (or
// bicubic) filter, flips, normalises and writes CHW (image/resample.h). Output is float32 [3, size,
// width], or uint8 [3, size, width] as resized, for normalising where the model runs.
//
// A record that cannot be made into a sample (a corrupt or truncated image, an image over the
// pixel cap) is a Status naming the field; the loader adds dataset, shard and record and
// applies its error policy.

#include <memory>
#include <string>
#include <vector>

#include "stoker/image/crop_sampler.h"
#include "stoker/image/float_pixel.h"
#include "stoker/pipeline/transform.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

// ImageNet's per-channel statistics, torchvision's usual Normalize values.
inline const std::vector<float> kImageNetMean = {0.485f, 0.456f, 0.406f};
inline const std::vector<float> kImageNetStd = {0.229f, 0.224f, 0.225f};

// The largest output side (ImageOutput::size, a resize) the image transforms take: the
// resampler's (image/resample.h, asserted equal), for the CLI and Python alike.
inline constexpr int kMaxImageSize = 1 << 15;

// The resize filter: PIL's antialiased bilinear or bicubic, or (random crops only) either one
// per sample with equal odds, as timm's "random" interpolation.
enum class ImageInterpolation { kBilinear, kBicubic, kRandom };

// Whose resize an image transform's pixels are (ImageOutput::backend, the operations' parameter
// "backend": "pil", "tensor", "tensor_float", "tensor_float_fused": torch's float32 resize as
// torch 2.11's wheel sums it, or as torch 2.4's: image/torch_float_resize.h).
enum class ResizeBackend { kPil, kTensor, kTensorFloat, kTensorFloatFused };

// The backend called `name`; kPil for any other name.
ResizeBackend resize_backend_named(const std::string& name);

// The interpolation called `name` ("bilinear", "bicubic" or "random"; the operations' parameter
// "interpolation"); kBilinear for any other name.
ImageInterpolation interpolation_named(const std::string& name);

// What an image transform writes.
struct ImageOutput {
  int size = 224;      // the output's height, >= 1, and its width unless `width` is set
  int width = 0;       // the output's width, >= 1; 0: size (a square)
  bool uint8 = false;  // true: uint8 as resized; false: float32 (unit(x) - mean[c]) / std[c]
  std::vector<float> mean = kImageNetMean;  // float32 only; one value or one per channel
  std::vector<float> std = kImageNetStd;
  image::UnitScale unit = image::UnitScale::kDivide;  // image/float_pixel.h
  ImageInterpolation interpolation = ImageInterpolation::kBilinear;
  // Whose resize the pixels are: torchvision's of a PIL image (PIL's filters), its v2 resize of
  // a uint8 tensor (torch's antialiased uint8 kernels: the same filters with fewer fractional
  // bits, image/resample_filter.h), or its resize of a tensor in float32 (v1's,
  // image/torch_float_resize.h).
  ResizeBackend backend = ResizeBackend::kPil;
  // The fast mode, opt-in (`--dct-scaling`, Python's dct_scaling=True): decode JPEGs at a
  // reduced DCT scale (1/2, 1/4) when the scaled crop still covers the output, which is faster;
  // its pixels then differ from a full-resolution decode (docs/BENCHMARKS.md says by how much
  // and what it buys). Off, the default: torchvision's PIL pixels, uint8 byte for byte.
  bool dct_scaling = false;
  // Decode only the rectangle the sample needs (off: the whole image, as PIL does; for
  // measuring what crop decoding buys).
  bool crop_decode = true;
  // Resize with the SIMD kernel (off: the scalar reference, the same bytes; for measuring).
  bool simd_resize = true;
};

// torchvision's RandomResizedCrop + RandomHorizontalFlip parameters.
struct RandomCropOptions {
  image::RandomResizedCropParams crop;  // scale (0.08, 1), ratio (3/4, 4/3)
  double flip_probability = 0.5;        // in [0, 1]
};

// The training transform of bytes field `field` of `schema`. kInvalidArgument naming the
// field if it is not a bytes field or the options are out of range.
Result<std::shared_ptr<const Transform>> random_resized_crop_transform(
    const Schema& schema, const std::string& field, const ImageOutput& output,
    const RandomCropOptions& options = {});

// The evaluation transform: the shorter side resized to `resize` (0: the crop's larger side
// * 256 / 224, the usual 256 for 224) unless the longer would pass `max_size` (0: no limit;
// then the longer is max_size, torchvision's Resize(max_size=)), then the central size × width
// crop, zero-padded where the resized image is smaller (torchvision's CenterCrop). Same errors.
Result<std::shared_ptr<const Transform>> center_crop_transform(const Schema& schema,
                                                               const std::string& field,
                                                               const ImageOutput& output,
                                                               int resize = 0, int max_size = 0);

// torchvision's Resize alone: the shorter side resized to `resize` unless the longer would
// pass `max_size` (as above), no crop: a variable transform (transform.h) of uint8 samples
// [3, H, W] at their resized size, of capacity [3, output.size, output.size]; a sample over it
// is refused naming its size. Same errors.
Result<std::shared_ptr<const Transform>> resize_transform(const Schema& schema,
                                                          const std::string& field,
                                                          const ImageOutput& output, int resize,
                                                          int max_size = 0);

// True if field `field` of `schema` holds encoded images (a bytes field); the trainer and
// `bench loader` then use the transforms above.
bool is_encoded_image_field(const Schema& schema, const std::string& field);

}  // namespace stoker
