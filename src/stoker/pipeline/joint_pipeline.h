#pragma once
// A detection (or segmentation) sample's fields made together: the image decoded at its own
// size, its boxes, labels and masks read from the record, then changed by a list of joint
// operations (op_registry.h, role kJoint) in order, as torchvision's v2 transforms change
// (image, target): one flip draw moves the image, the boxes and the masks; dropping an object
// drops its box, label and mask. The fields are variable samples of the batch, made by one
// JointTransform (transform.h) in one call per sample.
//
//   image   uint8 [3, H, W] (float32 with float_image: v2's ToDtype(float32, scale=True), or
//           v1's convert_image_dtype, as float_unit says), H and W at most max_size
//   boxes   float32 [N, 4] XYXY in pixels; labels int64 [N]; masks uint8 [N, H, W] (the
//           importers' stacked PNG decoded), N at most the manifest's max_lengths of boxes;
//           masks an operation kept as they were (JointSample::keep_masks) come at their size
//           and count then, H and W at most masks_max_size
//   a class map (a segmentation sample's) uint8 or int64 [H, W]
//
// Determinism (docs/DESIGN.md contract 1): the k-th operation draws from the sample's stream
// step k (SampleInput::step = k, transform.h). Bad input (contract 5), one line naming the field:
// boxes and labels of different counts, a box outside its image (or not a number), masks that
// are not N masks of the image's size, a sample over a capacity.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stoker/image/float_pixel.h"
#include "stoker/pipeline/batch_layout.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

// The stored fields a joint transform reads (and the batch fields it makes, of the same names).
struct JointFields {
  std::string image = "image";  // an encoded image (bytes)
  // A detection sample's: float32 [N, 4] XYXY boxes and int64 [N] labels (both or neither), and
  // an 8-bit PNG of its N masks stacked (or none).
  std::string boxes, labels, masks;
  std::string class_map;       // a segmentation sample's: an 8-bit PNG class map (or none)
  int64_t max_size = 1024;     // the largest image side, which sizes the slots
  int64_t masks_max_size = 0;  // the masks' largest side, which sizes theirs (0: max_size)
  bool float_image = false;    // the image delivered as float32 (image/float_pixel.h):
  image::UnitScale float_unit = image::UnitScale::kMultiply;  // v2's x * float(1 / 255), or v1's
  // x / 255 (convert_image_dtype, its ToTensor). With float_image, the image then normalised
  // (x - mean[c]) / std[c] (3 each), or not (empty).
  std::vector<float> mean, std;
  bool class_map_int64 = false;  // the class map delivered as int64, else uint8
};

// The batch fields of `fields` made by `calls` (kJoint operations), one request per output
// (image, boxes, labels, masks, then the class map: those named), sharing one JointTransform.
// kInvalidArgument naming the field for a stored field of the wrong kind, the operation for a call
// that is not a joint one.
Result<std::vector<FieldRequest>> make_joint_requests(
    const Schema& schema, const JointFields& fields, const std::vector<OpCall>& calls,
    const std::map<std::string, uint64_t>& max_lengths);

}  // namespace stoker
