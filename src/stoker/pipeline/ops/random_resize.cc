// random_resize: torchvision v2's RandomResize(min_size, max_size) on a sample (image, target) of
// PIL images, as the segmentation reference's preset runs it. One draw (uniform_below, from the
// operation's own stream) picks a size s in [min_size, max_size); the shorter side becomes s and
// the longer int(s * long / short) (v2's _compute_resized_output_size, in doubles), resized as
// ops/joint_resize.h says (image PIL's bilinear, masks and class map nearest, boxes scaled):
// torch's nearest as v2 resizes a Mask, or with masks="pil" PIL's NEAREST as the segmentation
// reference's v1 RandomResize resizes its PIL mask (its random.randint(min, max) is
// [min_size, max_size + 1) here).
#include <fmt/format.h>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/joint_resize.h"

namespace stoker::ops {
namespace {

class RandomResize : public JointOp {
 public:
  RandomResize(int64_t min_size, int64_t max_size, bool pil_nearest)
      : min_size_(min_size), max_size_(max_size), pil_nearest_(pil_nearest) {}

  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput& input, JointSample& sample) const override {
    const int64_t size = min_size_ + static_cast<int64_t>(input.rng().uniform_below(
                                         static_cast<uint64_t>(max_size_ - min_size_)));
    const bool wide = sample.width > sample.height;
    const int64_t shorter = wide ? sample.height : sample.width;
    const int64_t longer = wide ? sample.width : sample.height;
    const auto resized_longer = static_cast<int64_t>(
        static_cast<double>(size) * static_cast<double>(longer) / static_cast<double>(shorter));
    return resize_joint_sample("random_resize", sample, wide ? resized_longer : size,
                               wide ? size : resized_longer, pil_nearest_);
  }

 private:
  const int64_t min_size_, max_size_;
  const bool pil_nearest_;
};

}  // namespace

OpSpec random_resize() {
  OpSpec op;
  op.name = "random_resize";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kPil;
  op.python_class = "RandomResize";
  op.doc =
      "The sample's shorter side resized to a size drawn in [min_size, max_size): image PIL's "
      "bilinear, masks nearest, boxes scaled (torchvision v2's RandomResize)";
  op.params = {
      ParamSpec::integer("min_size", 256, "the smallest shorter side").in(1, kMaxImageSize),
      ParamSpec::integer("max_size", 512, "above the largest shorter side").in(2, kMaxImageSize),
      ParamSpec::choice("masks", "torch", {"torch", "pil"},
                        "the masks' and class map's nearest: torch's (v2, a Mask) or PIL's (v1, a "
                        "PIL mask)"),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    const int64_t min_size = p.integer("min_size");
    const int64_t max_size = p.integer("max_size");
    if (max_size <= min_size)
      return invalid_argument(
          fmt::format("random_resize: max_size {} must be above min_size {}", max_size, min_size));
    return std::shared_ptr<const JointOp>(
        std::make_shared<RandomResize>(min_size, max_size, p.choice("masks") == "pil"));
  };
  return op;
}

}  // namespace stoker::ops
