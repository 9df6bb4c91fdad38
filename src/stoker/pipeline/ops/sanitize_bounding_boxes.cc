// sanitize_bounding_boxes: torchvision v2's SanitizeBoundingBoxes(min_size, min_area) on a
// detection sample: the objects whose XYXY box is narrower or lower than min_size, smaller in
// area than min_area, has a coordinate below 0 or past the image's width or height are dropped,
// their box, label and mask together (as v2 drops the boxes, the labels its labels_getter finds
// and the masks). No draw.
#include <fmt/format.h>

#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {
namespace {

class SanitizeBoundingBoxes : public JointOp {
 public:
  SanitizeBoundingBoxes(double min_size, double min_area)
      : min_size_(static_cast<float>(min_size)), min_area_(static_cast<float>(min_area)) {}
  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput&, JointSample& sample) const override {
    thread_local std::vector<uint8_t> keep;
    keep.assign(static_cast<size_t>(sample.rows()), 0);
    const auto width = static_cast<float>(sample.width);
    const auto height = static_cast<float>(sample.height);
    for (size_t k = 0; k < keep.size(); ++k) {
      const float* box = &sample.boxes[4 * k];
      const float w = box[2] - box[0];
      const float h = box[3] - box[1];
      keep[k] = w >= min_size_ && h >= min_size_ && w * h >= min_area_ && box[0] >= 0 &&
                box[1] >= 0 && box[2] >= 0 && box[3] >= 0 && box[0] <= width && box[2] <= width &&
                box[1] <= height && box[3] <= height;
    }
    sample.keep_rows(keep);
    return Status::ok();
  }

 private:
  const float min_size_, min_area_;
};

}  // namespace

OpSpec sanitize_bounding_boxes() {
  OpSpec op;
  op.name = "sanitize_bounding_boxes";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kBoth;
  op.python_class = "SanitizeBoundingBoxes";
  op.doc =
      "Drops the objects whose box is degenerate, below min_size or min_area, or outside the "
      "image: box, label and mask together (torchvision v2's SanitizeBoundingBoxes)";
  op.params = {
      ParamSpec::real("min_size", 1.0, "the smallest width and height kept").in(1, 1e9),
      ParamSpec::real("min_area", 1.0, "the smallest area kept").in(1, 1e18),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    return std::shared_ptr<const JointOp>(
        std::make_shared<SanitizeBoundingBoxes>(p.real("min_size"), p.real("min_area")));
  };
  return op;
}

}  // namespace stoker::ops
