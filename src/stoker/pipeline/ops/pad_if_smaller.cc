// pad_if_smaller: the segmentation reference's PadIfSmaller(size, fill)
// (references/segmentation/v2_extras.py, its v2 preset's padding before RandomCrop) on a joint
// sample of PIL images: a side shorter than `size` padded on the right or bottom to it, the image
// with `fill` per channel, masks and the class map with mask_fill (the preset's fill={Mask: 255,
// "others": 0}); boxes stay where they are (ops/joint_canvas.h). No draw.
#include <algorithm>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/joint_canvas.h"

namespace stoker::ops {
namespace {

class PadIfSmaller : public JointOp {
 public:
  PadIfSmaller(int64_t size, const CanvasFill& fill) : size_(size), fill_(fill) {}

  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput&, JointSample& sample) const override {
    if (sample.width >= size_ && sample.height >= size_) return Status::ok();
    return place_joint_sample("pad_if_smaller", sample, 0, 0, std::max(sample.width, size_),
                              std::max(sample.height, size_), fill_);
  }

 private:
  const int64_t size_;
  const CanvasFill fill_;
};

}  // namespace

OpSpec pad_if_smaller() {
  OpSpec op;
  op.name = "pad_if_smaller";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kBoth;
  op.python_class = "PadIfSmaller";
  op.doc =
      "The sample padded on the right and bottom to at least size x size (the segmentation "
      "reference's PadIfSmaller)";
  op.params = {
      ParamSpec::integer("size", 480, "the smallest side after padding").in(1, kMaxImageSize),
      ParamSpec::reals("fill", {0}, "the image's padding, one value or one per channel", 1, 3)
          .in(0, 255),
      ParamSpec::integer("mask_fill", 255, "the masks' and class map's padding").in(0, 255),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    CanvasFill canvas;
    STOKER_ASSIGN_OR_RETURN(canvas.image, image_fill("pad_if_smaller", p.reals("fill")));
    canvas.masks = canvas.class_map = static_cast<uint8_t>(p.integer("mask_fill"));
    return std::shared_ptr<const JointOp>(
        std::make_shared<PadIfSmaller>(p.integer("size"), canvas));
  };
  return op;
}

}  // namespace stoker::ops
