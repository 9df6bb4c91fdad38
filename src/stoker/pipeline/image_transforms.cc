#include "stoker/pipeline/image_transforms.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "stoker/image/decode.h"
#include "stoker/image/image_header.h"
#include "stoker/image/resample.h"
#include "stoker/image/torch_float_resize.h"
#include "stoker/store/record_view.h"

namespace stoker {
namespace {

// Stored sizes beyond this are not an image's (JPEG's limit is 65,500, PNG's 2^31 - 1, but
// the pixel cap refuses anything this long and wide).
constexpr int64_t kMaxStoredSide = int64_t{1} << 24;

// The int64 scalar field `name` of `schema`, or -1.
int int64_scalar_field(const Schema& schema, const char* name) {
  const int f = schema.find(name);
  if (f < 0) return -1;
  const Field& field = schema.fields()[f];
  return field.is_fixed() && field.dtype == DType::kInt64 && field.shape.empty() ? f : -1;
}

// What one sample becomes: the rectangle of the image to decode, the box inside it (in the
// image's pixels) that is resized to the output, and whether to mirror it.
struct SamplePlan {
  image::CropRect decode;
  image::PixelBox box;
  bool flip = false;
  bool bicubic = false;  // the filter drawn for the sample (random interpolation)
  // A box resized into the inner_width x inner_height rectangle at (pad_left, pad_top) of the
  // output, zeros around it (torchvision's CenterCrop padding); inner_width 0: the whole output.
  int pad_left = 0;
  int pad_top = 0;
  int inner_width = 0;
  int inner_height = 0;
  // A sample of its own size (a variable transform's): the box resized to out_width x
  // out_height, no padding; 0: the transform's output size.
  int out_width = 0;
  int out_height = 0;
  // The resize torchvision's tensor backend runs, whose largest weight sets torch's precision:
  // the whole image to resized_width x resized_height; 0: the box to the output (a crop resized
  // whole).
  int resized_width = 0;
  int resized_height = 0;
  // The part of that resize the sample is (CenterCrop's, in the resized image); width 0: all.
  image::ResampleWindow window;
};

// The common part of the image transforms: find the bytes and the image's size, decode the
// planned rectangle, resample it into the slot. Subclasses plan the sample; Base is Transform
// (FixedImageTransform) or VariableTransform (a sample of its own size).
template <typename Base>
class EncodedImageTransform : public Base {
 public:
  EncodedImageTransform(const Schema& schema, int field, const ImageOutput& output)
      : random_filter_(output.interpolation == ImageInterpolation::kRandom),
        field_(field),
        name_(schema.fields()[field].name),
        height_field_(int64_scalar_field(schema, "height")),
        width_field_(int64_scalar_field(schema, "width")),
        output_(output) {
    out_.height = output.size;
    out_.width = output.width > 0 ? output.width : output.size;
    out_.type =
        output.uint8 ? image::ResampleOutput::Type::kUint8 : image::ResampleOutput::Type::kFloat32;
    out_.filter = output.interpolation == ImageInterpolation::kBicubic
                      ? image::ResampleFilter::kBicubic
                      : image::ResampleFilter::kBilinear;
    out_.unit = output.unit;
    for (int c = 0; c < 3; ++c) {
      out_.mean[c] = output.mean.size() == 1 ? output.mean[0] : output.mean[c];
      out_.std[c] = output.std.size() == 1 ? output.std[0] : output.std[c];
    }
  }

  DType dtype() const override {
    return out_.type == image::ResampleOutput::Type::kUint8 ? DType::kUint8 : DType::kFloat32;
  }
  std::vector<int64_t> sample_shape() const override { return {3, out_.height, out_.width}; }

 protected:
  // The sample into `slot`; its shape [3, H, W] into `shape` where not null.
  Status render(const SampleInput& input, uint8_t* slot, int64_t* shape) const {
    Result<ByteSpan> field = variable_field(*input.schema, input.record, field_);
    if (!field.is_ok()) return field.status();
    const ByteSpan bytes = field.value();
    Result<std::pair<int, int>> size = image_size(*input.schema, input.record, bytes);
    if (!size.is_ok()) return with_field(size.status());
    const auto [width, height] = size.value();
    Result<SamplePlan> planned = plan(width, height, input);
    if (!planned.is_ok()) return with_field(planned.status());
    const SamplePlan& plan = planned.value();
    if (shape != nullptr) {
      shape[0] = 3;
      shape[1] = plan.out_height > 0 ? plan.out_height : out_.height;
      shape[2] = plan.out_width > 0 ? plan.out_width : out_.width;
    }

    // A padded plan resamples into `inner`, then placed in the slot.
    thread_local std::vector<uint8_t> inner;
    uint8_t* target = slot;
    if (plan.inner_width > 0) {
      inner.resize(3 * static_cast<size_t>(plan.inner_width) * plan.inner_height *
                   dtype_size(this->dtype()));
      target = inner.data();
    }
    const auto finish = [&](Status status) {
      if (status.is_ok() && target != slot) place_padded(plan, target, slot);
      return with_field(status);
    };
    thread_local image::DecodeBuffer buffer;
    thread_local image::Resampler simd(image::ResampleKernel::kSimd);
    thread_local image::Resampler scalar(image::ResampleKernel::kScalar);
    image::Resampler& resampler = output_.simd_resize ? simd : scalar;
    if (output_.backend == ResizeBackend::kTensorFloat ||
        output_.backend == ResizeBackend::kTensorFloatFused)
      return finish(render_float(bytes, width, height, plan, buffer, resampler, target));
    image::DecodeRequest request;
    if (!output_.crop_decode) {
      // The whole image at full scale, then the plan's rectangle of it: the same pixels.
      Result<image::DecodedCrop> whole = image::decode_rgb(bytes, request, buffer);
      if (!whole.is_ok()) return with_field(whole.status());
      const image::RgbView& all = whole.value().pixels;
      if (all.width != width || all.height != height)
        return with_field(corrupt(fmt::format("stored size {}x{} but the image is {}x{}", width,
                                              height, all.width, all.height)));
      const image::RgbView part = {all.row(plan.decode.y) + 3 * plan.decode.x, plan.decode.width,
                                   plan.decode.height, all.stride};
      const image::PixelBox box = {plan.box.x0 - plan.decode.x, plan.box.y0 - plan.decode.y,
                                   plan.box.x1 - plan.decode.x, plan.box.y1 - plan.decode.y};
      return finish(resampler.resample(part, box, output(plan, width, height), target));
    }
    request.crop = plan.decode;
    if (output_.dct_scaling) {
      // The scaled rectangle must still cover the output box at full resolution: a reduced
      // decode then only replaces part of the downscale the resize would do anyway.
      const image::ResampleOutput out = output(plan, width, height);
      request.min_width =
          static_cast<int>(std::ceil(out.width * plan.decode.width / (plan.box.x1 - plan.box.x0)));
      request.min_height = static_cast<int>(
          std::ceil(out.height * plan.decode.height / (plan.box.y1 - plan.box.y0)));
    }
    // Decoded rows go straight into the resize, a few at a time: the crop is never whole.
    Result<image::DecodedRows*> decoded = image::decode_rgb_rows(bytes, request, buffer);
    if (!decoded.is_ok()) return with_field(decoded.status());
    image::DecodedRows& rows = *decoded.value();
    return finish(resampler.resample(rows, image::map_into(rows.box, plan.decode, plan.box),
                                     output(plan, width, height), target));
  }

  // The sample's plan for an image of width × height pixels.
  virtual Result<SamplePlan> plan(int width, int height, const SampleInput& input) const = 0;

  image::ResampleOutput out_;
  const bool random_filter_;  // bilinear or bicubic drawn per sample

 private:
  // torchvision's resize of a tensor in float32 (image/torch_float_resize.h): the whole
  // resize's window, from the decoded crop (RandomResizedCrop: torch crops first) or the whole
  // image, then written by an identity resample (the flip, the conversion, the layout).
  Status render_float(ByteSpan bytes, int width, int height, const SamplePlan& plan,
                      image::DecodeBuffer& buffer, image::Resampler& resampler,
                      uint8_t* target) const {
    const bool crop_first = plan.resized_width == 0 && plan.out_width == 0;
    image::DecodeRequest request;
    request.crop = crop_first ? plan.decode : image::CropRect{0, 0, width, height};
    Result<image::DecodedCrop> decoded = image::decode_rgb(bytes, request, buffer);
    if (!decoded.is_ok()) return decoded.status();
    const image::RgbView& pixels = decoded.value().pixels;
    if (pixels.width != request.crop->width || pixels.height != request.crop->height)
      return corrupt(
          fmt::format("stored size {}x{} but the image decodes otherwise", width, height));
    const image::ResampleOutput out = output(plan, width, height);
    const bool whole = plan.resized_width > 0;  // CenterCrop's: the window of the whole resize
    thread_local std::vector<float> values;
    thread_local std::vector<uint8_t> resized;
    STOKER_RETURN_IF_ERROR(image::torch_float_resize(
        pixels, 0, 0, pixels.width, pixels.height, whole ? plan.resized_width : out.width,
        whole ? plan.resized_height : out.height, plan.window, out.filter, values,
        output_.backend == ResizeBackend::kTensorFloatFused ? image::TorchFloatSums::kFused
                                                            : image::TorchFloatSums::kUnrolled));
    image::round_to_uint8(values, out.filter, resized);
    const image::RgbView done{resized.data(), out.width, out.height,
                              static_cast<ptrdiff_t>(out.width) * 3};
    return resampler.resample(done, image::PixelBox{0.0, 0.0, 0.0 + out.width, 0.0 + out.height},
                              out, target);
  }

  // The resample of `plan` for an image of width x height pixels.
  image::ResampleOutput output(const SamplePlan& plan, int width, int height) const {
    image::ResampleOutput out = out_;
    out.flip_horizontal = plan.flip;
    if (plan.bicubic) out.filter = image::ResampleFilter::kBicubic;
    if (plan.inner_width > 0) {
      out.width = plan.inner_width;
      out.height = plan.inner_height;
    }
    if (plan.out_width > 0) {
      out.width = plan.out_width;
      out.height = plan.out_height;
    }
    if (output_.backend == ResizeBackend::kTensor) {
      const bool whole = plan.resized_width > 0;
      out.precision_x = image::torch_precision_bits(
          whole ? width : static_cast<int>(std::lround(plan.box.x1 - plan.box.x0)),
          whole ? plan.resized_width : out.width, out.filter);
      out.precision_y = image::torch_precision_bits(
          whole ? height : static_cast<int>(std::lround(plan.box.y1 - plan.box.y0)),
          whole ? plan.resized_height : out.height, out.filter);
    }
    return out;
  }

  // The slot: zeros (normalised, for float32 output) around `inner`, the plan's rectangle.
  void place_padded(const SamplePlan& plan, const uint8_t* inner, uint8_t* slot) const {
    const auto place = [&](const auto* from, auto* to, const auto& zero) {
      for (int c = 0; c < 3; ++c) {
        auto* plane = to + static_cast<size_t>(c) * out_.height * out_.width;
        std::fill(plane, plane + static_cast<size_t>(out_.height) * out_.width, zero(c));
        for (int y = 0; y < plan.inner_height; ++y)
          std::copy_n(from + (static_cast<size_t>(c) * plan.inner_height + y) * plan.inner_width,
                      plan.inner_width,
                      plane + static_cast<size_t>(plan.pad_top + y) * out_.width + plan.pad_left);
      }
    };
    if (out_.type == image::ResampleOutput::Type::kUint8)
      place(inner, slot, [](int) { return uint8_t{0}; });
    else
      place(reinterpret_cast<const float*>(inner), reinterpret_cast<float*>(slot),
            [&](int c) { return image::float_pixel(0, out_.unit, out_.mean[c], out_.std[c]); });
  }

  // The image's (width, height): the record's width/height fields if the schema has them
  // (`stoker convert imagefolder` stores them), else the image's header.
  Result<std::pair<int, int>> image_size(const Schema& schema, ByteSpan record,
                                         ByteSpan bytes) const {
    if (height_field_ >= 0 && width_field_ >= 0) {
      int64_t h, w;
      std::memcpy(&h, fixed_field(schema, record, height_field_), sizeof(h));
      std::memcpy(&w, fixed_field(schema, record, width_field_), sizeof(w));
      if (h >= 1 && w >= 1 && h <= kMaxStoredSide && w <= kMaxStoredSide)
        return std::make_pair(static_cast<int>(w), static_cast<int>(h));
      return corrupt(fmt::format("stored size {}x{} is not an image's", w, h));
    }
    Result<image::ImageHeader> header = image::read_image_header(bytes);
    if (!header.is_ok()) return header.status();
    return std::make_pair(header.value().width, header.value().height);
  }

  Status with_field(Status status) const {
    if (status.is_ok()) return status;
    return Status(status.code(), fmt::format("field '{}': {}", name_, status.message()));
  }

  const int field_;
  const std::string name_;
  const int height_field_;
  const int width_field_;
  const ImageOutput output_;  // the decode switches (dct_scaling, crop_decode, simd_resize)
};

// A sample of the output's fixed size.
class FixedImageTransform : public EncodedImageTransform<Transform> {
 public:
  using EncodedImageTransform::EncodedImageTransform;
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    return render(input, slot, nullptr);
  }
};

class RandomResizedCrop : public FixedImageTransform {
 public:
  RandomResizedCrop(const Schema& schema, int field, const ImageOutput& output,
                    const RandomCropOptions& options)
      : FixedImageTransform(schema, field, output), options_(options) {}

 protected:
  Result<SamplePlan> plan(int width, int height, const SampleInput& input) const override {
    CounterRng rng = input.rng();
    Result<image::CropRect> crop = image::random_resized_crop(width, height, options_.crop, rng);
    if (!crop.is_ok()) return crop.status();
    const image::CropRect& rect = crop.value();
    SamplePlan plan;
    plan.decode = rect;
    // torchvision crops first, so the filter never reaches pixels outside the crop.
    plan.box = {0.0 + rect.x, 0.0 + rect.y, 0.0 + rect.x + rect.width, 0.0 + rect.y + rect.height};
    plan.flip = rng.next_double() < options_.flip_probability;
    if (random_filter_) plan.bicubic = rng.next_double() < 0.5;
    return plan;
  }

 private:
  const RandomCropOptions options_;
};

class CenterCrop : public FixedImageTransform {
 public:
  CenterCrop(const Schema& schema, int field, const ImageOutput& output, int resize, int max_size)
      : FixedImageTransform(schema, field, output), resize_(resize), max_size_(max_size) {}

 protected:
  Result<SamplePlan> plan(int width, int height, const SampleInput&) const override {
    Result<image::ResizedCenterCrop> crop =
        image::resize_center_crop(width, height, resize_, out_.width, out_.height, max_size_);
    if (!crop.is_ok()) return crop.status();
    SamplePlan plan;
    plan.box = crop.value().box;
    const image::ResizedCenterCrop& c = crop.value();
    plan.resized_width = c.resized_width;
    plan.resized_height = c.resized_height;
    plan.window = {c.left, c.top, c.inner_width, c.inner_height};
    if (c.inner_width != c.width || c.inner_height != c.height) {
      plan.pad_left = c.pad_left;
      plan.pad_top = c.pad_top;
      plan.inner_width = c.inner_width;
      plan.inner_height = c.inner_height;
    }
    // torchvision resizes the whole image, so the filter reaches past the crop's edges by its
    // support (1 or 2 source pixels per output pixel's width when downscaling): decode that too.
    const double reach = out_.filter == image::ResampleFilter::kBicubic ? 2.0 : 1.0;
    const double support_x = reach * std::max(1.0, (plan.box.x1 - plan.box.x0) / c.inner_width) + 1;
    const double support_y =
        reach * std::max(1.0, (plan.box.y1 - plan.box.y0) / c.inner_height) + 1;
    const int x0 = std::max(0, static_cast<int>(std::floor(plan.box.x0 - support_x)));
    const int y0 = std::max(0, static_cast<int>(std::floor(plan.box.y0 - support_y)));
    const int x1 = std::min(width, static_cast<int>(std::ceil(plan.box.x1 + support_x)));
    const int y1 = std::min(height, static_cast<int>(std::ceil(plan.box.y1 + support_y)));
    plan.decode = {x0, y0, x1 - x0, y1 - y0};
    return plan;
  }

 private:
  const int resize_;
  const int max_size_;  // 0: none
};

// torchvision's Resize alone (shorter side to `resize`, the longer at most max_size): the whole
// image resampled to its resized size, a variable sample of capacity [3, output.size,
// output.size]; a larger one is refused naming its size.
class ResizeImage : public EncodedImageTransform<VariableTransform> {
 public:
  ResizeImage(const Schema& schema, int field, const ImageOutput& output, int resize, int max_size)
      : EncodedImageTransform(schema, field, output), resize_(resize), max_size_(max_size) {}

  Status apply_sized(const SampleInput& input, uint8_t* slot, int64_t* shape) const override {
    return render(input, slot, shape);
  }

 protected:
  Result<SamplePlan> plan(int width, int height, const SampleInput&) const override {
    Result<image::ResizedCenterCrop> resized =
        image::resize_center_crop(width, height, resize_, 1, 1, max_size_);
    if (!resized.is_ok()) return resized.status();
    const int out_width = resized.value().resized_width;
    const int out_height = resized.value().resized_height;
    if (out_width > out_.width || out_height > out_.height)
      return invalid_argument(fmt::format("the image resized is {}x{}, over the capacity {}x{}",
                                          out_width, out_height, out_.width, out_.height));
    SamplePlan plan;
    plan.decode = {0, 0, width, height};
    plan.box = {0.0, 0.0, 0.0 + width, 0.0 + height};
    plan.out_width = out_width;
    plan.out_height = out_height;
    return plan;
  }

 private:
  const int resize_;
  const int max_size_;  // 0: none
};

static_assert(kMaxImageSize == image::kMaxResampleOutputSide);

Status check_output(const Schema& schema, const std::string& field, const ImageOutput& output) {
  if (!is_encoded_image_field(schema, field))
    return invalid_argument(fmt::format("field '{}': not a bytes field of encoded images", field));
  if (output.size < 1 || output.size > kMaxImageSize)
    return invalid_argument(fmt::format("field '{}': image size {} is outside [1, {}]", field,
                                        output.size, kMaxImageSize));
  if (output.width < 0 || output.width > kMaxImageSize)
    return invalid_argument(fmt::format("field '{}': image width {} is outside [0, {}]", field,
                                        output.width, kMaxImageSize));
  if (output.uint8) return Status::ok();
  for (const std::vector<float>* values : {&output.mean, &output.std}) {
    if (values->size() != 1 && values->size() != 3)
      return invalid_argument(fmt::format(
          "field '{}': mean and std need one value or three (RGB), got {}", field, values->size()));
  }
  for (float s : output.std) {
    if (!(std::isfinite(s) && s != 0))
      return invalid_argument(
          fmt::format("field '{}': std {} is not finite and non-zero", field, s));
  }
  return Status::ok();
}

}  // namespace

ResizeBackend resize_backend_named(const std::string& name) {
  if (name == "tensor") return ResizeBackend::kTensor;
  if (name == "tensor_float") return ResizeBackend::kTensorFloat;
  if (name == "tensor_float_fused") return ResizeBackend::kTensorFloatFused;
  return ResizeBackend::kPil;
}

ImageInterpolation interpolation_named(const std::string& name) {
  if (name == "bicubic") return ImageInterpolation::kBicubic;
  if (name == "random") return ImageInterpolation::kRandom;
  return ImageInterpolation::kBilinear;
}

bool is_encoded_image_field(const Schema& schema, const std::string& field) {
  const int f = schema.find(field);
  return f >= 0 && schema.fields()[f].dtype == DType::kBytes;
}

Result<std::shared_ptr<const Transform>> random_resized_crop_transform(
    const Schema& schema, const std::string& field, const ImageOutput& output,
    const RandomCropOptions& options) {
  if (Status s = check_output(schema, field, output); !s.is_ok()) return s;
  if (Status s = image::check_random_resized_crop_params(options.crop); !s.is_ok())
    return invalid_argument(fmt::format("field '{}': {}", field, s.message()));
  if (!(options.flip_probability >= 0 && options.flip_probability <= 1))
    return invalid_argument(fmt::format("field '{}': flip probability {} is outside [0, 1]", field,
                                        options.flip_probability));
  return std::shared_ptr<const Transform>(
      std::make_shared<RandomResizedCrop>(schema, schema.find(field), output, options));
}

Result<std::shared_ptr<const Transform>> center_crop_transform(const Schema& schema,
                                                               const std::string& field,
                                                               const ImageOutput& output,
                                                               int resize, int max_size) {
  if (Status s = check_output(schema, field, output); !s.is_ok()) return s;
  if (output.interpolation == ImageInterpolation::kRandom)
    return invalid_argument(
        fmt::format("field '{}': the evaluation resize is bilinear or bicubic, not random", field));
  const int side = std::max(output.size, output.width);  // the crop's larger side
  if (resize == 0) resize = static_cast<int>(std::lround(side * 256.0 / 224.0));
  if (resize < 1 || resize > kMaxImageSize)  // below the crop: zero-padded, as torchvision's
    return invalid_argument(
        fmt::format("field '{}': resize {} is outside [1, {}]", field, resize, kMaxImageSize));
  if (max_size != 0 && (max_size <= resize || max_size > kMaxImageSize))
    return invalid_argument(
        fmt::format("field '{}': max_size {} is outside [{}, {}] (above resize)", field, max_size,
                    resize + 1, kMaxImageSize));
  return std::shared_ptr<const Transform>(
      std::make_shared<CenterCrop>(schema, schema.find(field), output, resize, max_size));
}

Result<std::shared_ptr<const Transform>> resize_transform(const Schema& schema,
                                                          const std::string& field,
                                                          const ImageOutput& output, int resize,
                                                          int max_size) {
  if (Status s = check_output(schema, field, output); !s.is_ok()) return s;
  if (output.interpolation == ImageInterpolation::kRandom)
    return invalid_argument(
        fmt::format("field '{}': the resize is bilinear or bicubic, not random", field));
  if (resize < 1 || resize > kMaxImageSize)
    return invalid_argument(
        fmt::format("field '{}': resize {} is outside [1, {}]", field, resize, kMaxImageSize));
  if (max_size != 0 && (max_size <= resize || max_size > kMaxImageSize))
    return invalid_argument(
        fmt::format("field '{}': max_size {} is outside [{}, {}] (above resize)", field, max_size,
                    resize + 1, kMaxImageSize));
  return std::shared_ptr<const Transform>(
      std::make_shared<ResizeImage>(schema, schema.find(field), output, resize, max_size));
}

}  // namespace stoker
