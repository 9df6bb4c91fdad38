#include "stoker/pipeline/sample_type.h"

#include <fmt/format.h>

namespace stoker {

std::string describe(const SampleType& type) {
  const std::string varying = type.variable ? " of varying size" : "";
  switch (type.layout) {
    case Layout::kRecord:
      return "records";
    case Layout::kEncoded:
      return "encoded bytes (images, videos)";
    case Layout::kImage:
      return fmt::format("{} images [C, H, W]{}", dtype_name(type.dtype), varying);
    case Layout::kClip:
      return fmt::format("{} video clips{}", dtype_name(type.dtype), varying);
    case Layout::kArray:
      return fmt::format("{} arrays{}", dtype_name(type.dtype), varying);
    case Layout::kDetection:
      return "detection samples (image, boxes, labels, masks)";
    case Layout::kBatch:
      return "whole batches";
  }
  return "samples";
}

const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::kRecord:
      return "record";
    case Layout::kEncoded:
      return "encoded";
    case Layout::kImage:
      return "image";
    case Layout::kClip:
      return "clip";
    case Layout::kArray:
      return "array";
    case Layout::kDetection:
      return "detection";
    case Layout::kBatch:
      return "batch";
  }
  return "?";
}

SampleType stored_type(const Field& field) {
  if (field.dtype == DType::kBytes) return {Layout::kEncoded, DType::kBytes, true};
  const bool image = field.is_fixed() && field.dtype == DType::kUint8 && field.shape.size() == 3 &&
                     (field.shape[0] == 1 || field.shape[0] == 3);
  return {image ? Layout::kImage : Layout::kArray, field.dtype, !field.is_fixed()};
}

}  // namespace stoker
