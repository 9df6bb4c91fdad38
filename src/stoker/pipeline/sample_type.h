#pragma once
// SampleType: what an operation takes and makes (op_registry.h's OpSpec::input and ::output),
// the field pipeline's types: a sample's layout (what its dimensions mean), its element type,
// and whether its size may vary from sample to sample. field_pipeline.h composes a field's
// operations by them: each takes what the one before it makes, the first what the stored field
// holds, and a source operation takes the record itself (it comes first). A new kind of sample
// (a clip [T, C, H, W], audio [C, T], tokens [N]) is a Layout here, the operations that take or
// make it, and its describe() text; nothing else checks layouts by name.

#include <string>

#include "stoker/store/schema.h"

namespace stoker {

enum class Layout {
  kRecord,     // the dataset's record: a source operation reads the fields it needs
  kEncoded,    // encoded bytes of varying length: an image's (JPEG, PNG) or a video file's
  kImage,      // [C, H, W], C 1 or 3
  kClip,       // video frames [T, C, H, W] or [C, T, H, W], several clips [K, ...]
  kArray,      // another array (a label, a vector, bytes delivered as stored): its own shape
  kDetection,  // a detection or segmentation sample: image, boxes, labels, masks together
  kBatch,      // a finished batch, all its fields (MixUp, CutMix)
};

struct SampleType {
  Layout layout = Layout::kImage;
  DType dtype = DType::kUint8;
  bool variable = false;  // the size varies from sample to sample

  bool operator==(const SampleType& other) const {
    return layout == other.layout && dtype == other.dtype && variable == other.variable;
  }
  bool operator!=(const SampleType& other) const { return !(*this == other); }
};

// The sample types the roles' operations take and make.
inline constexpr SampleType kRecordType{Layout::kRecord, DType::kBytes, true};
inline constexpr SampleType kUint8Image{Layout::kImage, DType::kUint8, false};
inline constexpr SampleType kFloatImage{Layout::kImage, DType::kFloat32, false};
inline constexpr SampleType kDetectionSample{Layout::kDetection, DType::kUint8, true};
inline constexpr SampleType kBatchType{Layout::kBatch, DType::kFloat32, false};

// "uint8 images [C, H, W]", "encoded bytes", "int64 arrays of varying size", ...
std::string describe(const SampleType& type);
// "record", "encoded", "image", "clip", "array", "detection", "batch" (the registry's JSON).
const char* to_string(Layout layout);

// What a pipeline's first operation gets of stored field `field`: encoded bytes, a uint8
// image where the shape is [1 or 3, H, W], else an array of its dtype.
SampleType stored_type(const Field& field);

}  // namespace stoker
