// scale_jitter: torchvision v2's ScaleJitter(target_size, scale_range) on a detection sample of
// PIL images (the `lsj` preset's large scale jitter), its make_params in float32 with the draw
// u = next_float() from the operation's own stream (torch.rand's float32 value):
// scale = float(s0) + u * float(s1 - s0), r = float(min(target_size[1] / H, target_size[0] / W))
// * scale (the minimum in double), the sample resized to int(float(W) r) x int(float(H) r) as
// ops/joint_resize.h does (image PIL's bilinear, which always antialiases; masks nearest; boxes
// scaled).
#include <fmt/format.h>

#include <algorithm>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/joint_resize.h"

namespace stoker::ops {
namespace {

class ScaleJitter : public JointOp {
 public:
  ScaleJitter(double target_width, double target_height, double min_scale, double max_scale)
      : target_width_(target_width),
        target_height_(target_height),
        min_scale_(static_cast<float>(min_scale)),
        scale_span_(static_cast<float>(max_scale - min_scale)) {}

  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput& input, JointSample& sample) const override {
    const float scale = min_scale_ + input.rng().next_float() * scale_span_;
    const auto width = static_cast<double>(sample.width);
    const auto height = static_cast<double>(sample.height);
    const float r =
        static_cast<float>(std::min(target_height_ / height, target_width_ / width)) * scale;
    return resize_joint_sample("scale_jitter", sample,
                               static_cast<int64_t>(static_cast<float>(sample.width) * r),
                               static_cast<int64_t>(static_cast<float>(sample.height) * r));
  }

 private:
  const double target_width_, target_height_;
  const float min_scale_, scale_span_;
};

}  // namespace

OpSpec scale_jitter() {
  OpSpec op;
  op.name = "scale_jitter";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kPil;
  op.python_class = "ScaleJitter";
  op.doc =
      "The sample resized by a random scale of the size that fits target_size: image PIL's "
      "bilinear, masks nearest, boxes scaled (torchvision v2's ScaleJitter, large scale jitter)";
  op.params = {
      ParamSpec::reals("target_size", {1024, 1024},
                       "the size the scales are of, as v2 takes it (target_size[0] bounds the "
                       "width, target_size[1] the height)",
                       2, 2)
          .in(1, kMaxImageSize),
      ParamSpec::reals("scale_range", {0.1, 2.0}, "the smallest and largest scale", 2, 2)
          .in(0, 1000),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    const std::vector<double> target = p.reals("target_size");
    const std::vector<double> scale = p.reals("scale_range");
    if (scale[0] > scale[1])
      return invalid_argument(
          fmt::format("scale_jitter: scale_range [{}, {}] has its minimum above its maximum",
                      scale[0], scale[1]));
    return std::shared_ptr<const JointOp>(
        std::make_shared<ScaleJitter>(target[0], target[1], scale[0], scale[1]));
  };
  return op;
}

}  // namespace stoker::ops
