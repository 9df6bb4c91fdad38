// random_zoom_out: torchvision v2's RandomZoomOut(fill, side_range, p) on a detection sample (the
// `ssd` preset's zoom), its make_params in float32 with draws u0 ... u3 = next_float() from the
// operation's own stream (torch.rand's float32 values): u0 >= float(p) leaves the sample as it
// is; else r = float(s0) + u1 * float(s1 - s0), a canvas of int(float(W) r) x int(float(H) r),
// the sample at left = int(float(W' - W) u2), top = int(float(H' - H) u3), the rest of the image
// filled with `fill` per channel (PIL's pad of the references' PIL images), masks and a class map
// with mask_fill, boxes moved by (left, top) (ops/joint_canvas.h). With masks "kept" (the
// detection reference's v1 RandomZoomOut, which pads the image alone) the masks stay as they are
// (JointSample::keep_masks).
#include <fmt/format.h>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/joint_canvas.h"

namespace stoker::ops {
namespace {

class RandomZoomOut : public JointOp {
 public:
  RandomZoomOut(const CanvasFill& fill, double min_side, double max_side, double p, bool keep_masks)
      : fill_(fill),
        min_side_(static_cast<float>(min_side)),
        side_span_(static_cast<float>(max_side - min_side)),
        p_(static_cast<float>(p)),
        keep_masks_(keep_masks) {}

  Status apply(const SampleInput& input, JointSample& sample) const override {
    if (keep_masks_) sample.keep_masks();
    CounterRng rng = input.rng();
    if (rng.next_float() >= p_) return Status::ok();
    const float r = min_side_ + rng.next_float() * side_span_;
    const auto canvas_width = static_cast<int64_t>(static_cast<float>(sample.width) * r);
    const auto canvas_height = static_cast<int64_t>(static_cast<float>(sample.height) * r);
    const auto left =
        static_cast<int64_t>(static_cast<float>(canvas_width - sample.width) * rng.next_float());
    const auto top =
        static_cast<int64_t>(static_cast<float>(canvas_height - sample.height) * rng.next_float());
    return place_joint_sample("random_zoom_out", sample, -left, -top, canvas_width, canvas_height,
                              fill_);
  }

 private:
  const CanvasFill fill_;
  const float min_side_, side_span_, p_;
  const bool keep_masks_;
};

}  // namespace

OpSpec random_zoom_out() {
  OpSpec op;
  op.name = "random_zoom_out";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kPil;
  op.python_class = "RandomZoomOut";
  op.doc =
      "The sample placed at random on a canvas up to side_range times its size, filled around "
      "(torchvision v2's RandomZoomOut, the SSD zoom out)";
  op.params = {
      ParamSpec::reals("fill", {0}, "the image's fill, one value or one per channel", 1, 3)
          .in(0, 255),
      ParamSpec::integer("mask_fill", 0, "the masks' and class map's fill").in(0, 255),
      ParamSpec::reals("side_range", {1.0, 4.0},
                       "the smallest and largest canvas side, times "
                       "the sample's",
                       2, 2)
          .in(1, 64),
      ParamSpec::real("p", 0.5, "the probability of a zoom").in(0, 1),
      ParamSpec::choice("masks", "moved", {"moved", "kept"},
                        "masks placed with the image (v2), or kept as they are (the detection "
                        "reference's v1 step)"),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    const std::vector<double> side = p.reals("side_range");
    if (side[0] > side[1])
      return invalid_argument(
          fmt::format("random_zoom_out: side_range [{}, {}] has its minimum above its maximum",
                      side[0], side[1]));
    CanvasFill canvas;
    STOKER_ASSIGN_OR_RETURN(canvas.image, image_fill("random_zoom_out", p.reals("fill")));
    canvas.masks = canvas.class_map = static_cast<uint8_t>(p.integer("mask_fill"));
    return std::shared_ptr<const JointOp>(std::make_shared<RandomZoomOut>(
        canvas, side[0], side[1], p.real("p"), p.choice("masks") == "kept"));
  };
  return op;
}

}  // namespace stoker::ops
