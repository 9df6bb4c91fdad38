// joint_horizontal_flip: torchvision v2's RandomHorizontalFlip(p) on a detection sample (image,
// target): with probability p (one draw from the operation's own stream, next_double() < p, as
// random_horizontal_flip's) the image's, every mask's and the class map's columns are mirrored and
// each XYXY box becomes (W - x2, y1, W - x1, y2), as v2's horizontal_flip_bounding_boxes computes
// it in float32. The pixels' mirror waits (JointSample::mirrored) for the copy a crop or the
// pipeline makes anyway (ops/joint_canvas.h); masks kept as they are (JointSample::keep_masks)
// are mirrored at their own size, as the detection reference's v1 flip mirrors target["masks"].
#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {
namespace {

class JointHorizontalFlip : public JointOp {
 public:
  explicit JointHorizontalFlip(double p) : p_(p) {}
  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput& input, JointSample& sample) const override {
    if (!(input.rng().next_double() < p_)) return Status::ok();
    sample.mirrored = !sample.mirrored;
    if (sample.masks_kept) sample.kept_mirrored = !sample.kept_mirrored;
    const auto right = static_cast<float>(sample.width);
    for (size_t k = 0; k < sample.boxes.size(); k += 4) {
      const float x1 = sample.boxes[k];
      sample.boxes[k] = right - sample.boxes[k + 2];
      sample.boxes[k + 2] = right - x1;
    }
    return Status::ok();
  }

 private:
  const double p_;
};

}  // namespace

OpSpec joint_horizontal_flip() {
  OpSpec op;
  op.name = "joint_horizontal_flip";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomHorizontalFlip";
  op.doc =
      "The image, its masks and its boxes mirrored left to right with probability p "
      "(torchvision v2's RandomHorizontalFlip on (image, target))";
  op.params = {ParamSpec::real("p", 0.5, "probability of a flip").in(0, 1)};
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    return std::shared_ptr<const JointOp>(std::make_shared<JointHorizontalFlip>(p.real("p")));
  };
  return op;
}

}  // namespace stoker::ops
