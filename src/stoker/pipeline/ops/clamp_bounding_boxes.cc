// clamp_bounding_boxes: torchvision v2's ClampBoundingBoxes() on a detection sample: each XYXY
// box's x clamped to [0, W] and y to [0, H] (float32, v2's clamp_ of its non-rotated boxes,
// "soft" and "hard" alike). No draw; no row dropped.
#include <algorithm>

#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {
namespace {

class ClampBoundingBoxes : public JointOp {
 public:
  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput&, JointSample& sample) const override {
    const auto width = static_cast<float>(sample.width);
    const auto height = static_cast<float>(sample.height);
    for (size_t k = 0; k < sample.boxes.size(); k += 4) {
      for (size_t i = 0; i < 4; ++i) {
        float& v = sample.boxes[k + i];
        v = std::clamp(v, 0.0f, i % 2 == 0 ? width : height);
      }
    }
    return Status::ok();
  }
};

}  // namespace

OpSpec clamp_bounding_boxes() {
  OpSpec op;
  op.name = "clamp_bounding_boxes";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kBoth;
  op.python_class = "ClampBoundingBoxes";
  op.doc = "Clamps each box's x to [0, W] and y to [0, H] (torchvision v2's ClampBoundingBoxes)";
  op.make_joint = [](const Params&) -> Result<std::shared_ptr<const JointOp>> {
    return std::shared_ptr<const JointOp>(std::make_shared<ClampBoundingBoxes>());
  };
  return op;
}

}  // namespace stoker::ops
