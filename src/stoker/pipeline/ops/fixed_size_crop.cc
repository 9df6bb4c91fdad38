// fixed_size_crop: the detection reference's FixedSizeCrop(size, fill, padding_mode="constant")
// (references/detection/transforms.py, the `lsj` preset's crop) on a detection sample of PIL
// images: a side longer than the crop is cut at an offset int(float(side - crop) u) (one draw
// u = next_float() from the operation's own stream for both offsets, as the reference's one
// torch.rand(1)), the boxes moved and clamped to the cut and those left empty (x0 >= x1 or
// y0 >= y1) dropped with their labels and masks (keep_rows); then a side shorter than the crop
// is padded on the right or bottom, the image with `fill` per channel (PIL's pad: int(v) of each
// value), masks with 0 (ops/joint_canvas.h).
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/joint_canvas.h"

namespace stoker::ops {
namespace {

class FixedSizeCrop : public JointOp {
 public:
  FixedSizeCrop(int64_t height, int64_t width, const CanvasFill& fill)
      : height_(height), width_(width), fill_(fill) {}

  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput& input, JointSample& sample) const override {
    const int64_t cut_height = std::min(sample.height, height_);
    const int64_t cut_width = std::min(sample.width, width_);
    const bool cut = cut_height != sample.height || cut_width != sample.width;
    const float u = input.rng().next_float();
    const auto top =
        static_cast<int64_t>(static_cast<float>(std::max<int64_t>(sample.height - height_, 0)) * u);
    const auto left =
        static_cast<int64_t>(static_cast<float>(std::max<int64_t>(sample.width - width_, 0)) * u);
    if (Status s = place_joint_sample("fixed_size_crop", sample, left, top, width_, height_, fill_);
        !s.is_ok())
      return s;
    if (!cut) return Status::ok();
    thread_local std::vector<uint8_t> keep;
    keep.assign(static_cast<size_t>(sample.rows()), 0);
    const auto right = static_cast<float>(cut_width), bottom = static_cast<float>(cut_height);
    for (size_t k = 0; k < keep.size(); ++k) {
      float* box = &sample.boxes[4 * k];
      for (int i = 0; i < 4; ++i) box[i] = std::clamp(box[i], 0.0f, i % 2 == 0 ? right : bottom);
      keep[k] = box[0] < box[2] && box[1] < box[3];
    }
    sample.keep_rows(keep);
    return Status::ok();
  }

 private:
  const int64_t height_, width_;
  const CanvasFill fill_;
};

}  // namespace

OpSpec fixed_size_crop() {
  OpSpec op;
  op.name = "fixed_size_crop";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kPil;
  op.python_class = "FixedSizeCrop";
  op.doc =
      "The sample cut to at most size x width at a random offset, the objects left empty "
      "dropped, then padded on the right and bottom to size x width (the detection reference's "
      "FixedSizeCrop)";
  op.params = {
      ParamSpec::integer("size", 1024, "the crop's height").in(1, kMaxImageSize),
      ParamSpec::integer("width", 0, "the crop's width (0: size)").in(0, kMaxImageSize),
      ParamSpec::reals("fill", {0}, "the image's padding, one value or one per channel", 1, 3)
          .in(0, 255),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    CanvasFill canvas;
    STOKER_ASSIGN_OR_RETURN(canvas.image, image_fill("fixed_size_crop", p.reals("fill")));
    const int64_t size = p.integer("size");
    const int64_t width = p.integer("width") == 0 ? size : p.integer("width");
    return std::shared_ptr<const JointOp>(std::make_shared<FixedSizeCrop>(size, width, canvas));
  };
  return op;
}

}  // namespace stoker::ops
