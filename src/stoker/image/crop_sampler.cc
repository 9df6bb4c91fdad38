#include "stoker/image/crop_sampler.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace stoker::image {
namespace {

bool positive_and_finite(double x) { return std::isfinite(x) && x > 0; }

Status check_size(int width, int height) {
  if (width < 1 || height < 1)
    return invalid_argument("image size " + std::to_string(width) + "x" + std::to_string(height) +
                            " is empty");
  return Status::ok();
}

}  // namespace

double round_half_even(double x) {
  const double down = std::floor(x);
  const double frac = x - down;  // exact for every double
  if (frac > 0.5) return down + 1;
  if (frac < 0.5) return down;
  return std::fmod(down, 2.0) == 0 ? down : down + 1;
}

Status check_random_resized_crop_params(const RandomResizedCropParams& params) {
  if (!positive_and_finite(params.scale_min) || !positive_and_finite(params.scale_max) ||
      params.scale_min > params.scale_max)
    return invalid_argument("crop scale (" + std::to_string(params.scale_min) + ", " +
                            std::to_string(params.scale_max) +
                            ") must be finite with 0 < min <= max");
  if (!positive_and_finite(params.ratio_min) || !positive_and_finite(params.ratio_max) ||
      params.ratio_min > params.ratio_max)
    return invalid_argument("crop ratio (" + std::to_string(params.ratio_min) + ", " +
                            std::to_string(params.ratio_max) +
                            ") must be finite with 0 < min <= max");
  return Status::ok();
}

Result<CropRect> random_resized_crop(int width, int height, const RandomResizedCropParams& params,
                                     CounterRng& rng, bool* fell_back) {
  STOKER_RETURN_IF_ERROR(check_size(width, height));
  STOKER_RETURN_IF_ERROR(check_random_resized_crop_params(params));
  const double area = static_cast<double>(width) * height;
  const double log_ratio_min = std::log(params.ratio_min);
  const double log_ratio_max = std::log(params.ratio_max);
  if (fell_back) *fell_back = false;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area =
        area * (params.scale_min + (params.scale_max - params.scale_min) * rng.next_double());
    const double ratio =
        std::exp(log_ratio_min + (log_ratio_max - log_ratio_min) * rng.next_double());
    const double w = round_half_even(std::sqrt(target_area * ratio));
    const double h = round_half_even(std::sqrt(target_area / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      CropRect crop;
      crop.width = static_cast<int>(w);
      crop.height = static_cast<int>(h);
      crop.y = static_cast<int>(rng.uniform_below(static_cast<uint64_t>(height - crop.height) + 1));
      crop.x = static_cast<int>(rng.uniform_below(static_cast<uint64_t>(width - crop.width) + 1));
      return crop;
    }
  }
  if (fell_back) *fell_back = true;
  CropRect crop{0, 0, width, height};
  const double in_ratio = static_cast<double>(width) / height;
  if (in_ratio < params.ratio_min) {
    crop.height = static_cast<int>(round_half_even(width / params.ratio_min));
  } else if (in_ratio > params.ratio_max) {
    crop.width = static_cast<int>(round_half_even(height * params.ratio_max));
  }
  crop.y = (height - crop.height) / 2;
  crop.x = (width - crop.width) / 2;
  return crop;
}

Result<ResizedCenterCrop> resize_center_crop(int width, int height, int resize_size, int crop_width,
                                             int crop_height, int max_size) {
  STOKER_RETURN_IF_ERROR(check_size(width, height));
  if (resize_size < 1 || crop_width < 1 || crop_height < 1)
    return invalid_argument("resize size " + std::to_string(resize_size) + " and crop size " +
                            std::to_string(crop_width) + "x" + std::to_string(crop_height) +
                            " must be at least 1");
  if (max_size != 0 && max_size <= resize_size)
    return invalid_argument("max_size " + std::to_string(max_size) +
                            " must be above the resize size " + std::to_string(resize_size));
  ResizedCenterCrop out;
  const bool portrait = width <= height;
  const int shorter = portrait ? width : height, longer = portrait ? height : width;
  // torchvision: int(size * long / short), Python's true division of two integers; then
  // int(max_size * short' / long') where the longer is above max_size.
  int resized_shorter = resize_size;
  int resized_longer = static_cast<int>(static_cast<double>(int64_t{resize_size} * longer) /
                                        static_cast<double>(shorter));
  if (max_size != 0 && resized_longer > max_size) {
    resized_shorter = static_cast<int>(static_cast<double>(int64_t{max_size} * resized_shorter) /
                                       static_cast<double>(resized_longer));
    resized_longer = max_size;
  }
  out.resized_width = portrait ? resized_shorter : resized_longer;
  out.resized_height = portrait ? resized_longer : resized_shorter;
  // Per side: the crop's start in the resized image and its length there; zeros before it
  // where the crop is the longer (torchvision pads (c - r) // 2 before, the rest after).
  const auto place = [](int resized, int crop, int& pad, int& inner) {
    if (crop > resized) {
      pad = (crop - resized) / 2;
      inner = resized;
      return 0;
    }
    inner = crop;
    return static_cast<int>(round_half_even((resized - crop) / 2.0));
  };
  const int top = out.top = place(out.resized_height, crop_height, out.pad_top, out.inner_height);
  const int left = out.left = place(out.resized_width, crop_width, out.pad_left, out.inner_width);
  // (edge * size) / resized: exact at the image's own edges, so the box never leaves it.
  const auto to_source = [](int edge, int size, int resized) {
    return static_cast<double>(int64_t{edge} * size) / resized;
  };
  out.box = PixelBox{to_source(left, width, out.resized_width),
                     to_source(top, height, out.resized_height),
                     to_source(left + out.inner_width, width, out.resized_width),
                     to_source(top + out.inner_height, height, out.resized_height)};
  out.width = crop_width;
  out.height = crop_height;
  return out;
}

}  // namespace stoker::image
