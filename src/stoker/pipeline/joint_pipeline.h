#pragma once
// A detection (or segmentation) sample's fields made together: the image decoded at its own
// size, its boxes, labels and masks read from the record, then changed by a list of joint
// operations (op_registry.h, role kJoint) in order, as torchvision's v2 transforms change
// (image, target): one flip draw moves the image, the boxes and the masks; dropping an object
// drops its box, label and mask. The fields are variable samples of the batch, made by one
// JointTransform (transform.h) in one call per sample.
//
//   image   uint8 [3, H, W] (float32 x / 255 with float_image: ToDtype(float32, scale=True)),
//           H and W at most max_size
//   boxes   float32 [N, 4] XYXY in pixels; labels int64 [N]; masks uint8 [N, H, W] (the
//           importers' stacked PNG decoded), N at most the manifest's max_lengths of boxes
//
// Determinism (docs/DESIGN.md contract 1): the k-th operation draws from the sample's stream
// step k (SampleInput::step = k, transform.h). Bad input (contract 5), one line naming the field:
// boxes and labels of different counts, a box outside its image (or not a number), masks that
// are not N masks of the image's size, a sample over a capacity.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stoker/pipeline/batch_layout.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

// The stored fields a joint transform reads (and the batch fields it makes, of the same names).
struct JointFields {
  std::string image = "image";    // an encoded image (bytes)
  std::string boxes = "boxes";    // float32 [N, 4], XYXY
  std::string labels = "labels";  // int64 [N]
  std::string masks;              // an 8-bit grayscale PNG of the N masks stacked; empty: none
  int64_t max_size = 1024;        // the largest image side, which sizes the slots
  bool float_image = false;       // the image delivered as float32 x / 255
};

// The batch fields of `fields` made by `calls` (kJoint operations), one request per output
// (image, boxes, labels, then masks), sharing one JointTransform. kInvalidArgument naming the
// field for a stored field of the wrong kind, the operation for a call that is not a joint one.
Result<std::vector<FieldRequest>> make_joint_requests(
    const Schema& schema, const JointFields& fields, const std::vector<OpCall>& calls,
    const std::map<std::string, uint64_t>& max_lengths);

}  // namespace stoker
