// random_shortest_size: torchvision v2's RandomShortestSize(min_size, max_size) on a detection
// sample (image, target) of PIL images, as the detection reference's `multiscale` preset runs
// it. One draw (next_double(), from the operation's own stream) picks a min_size s; with
// r = s / min(H, W), capped by max_size / max(H, W), the sample becomes int(W r) x int(H r)
// (Python's doubles, truncated), resized as ops/joint_resize.h says (image PIL's bilinear,
// masks nearest, boxes scaled).
#include <algorithm>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/joint_resize.h"

namespace stoker::ops {
namespace {

class RandomShortestSize : public JointOp {
 public:
  RandomShortestSize(std::vector<double> min_sizes, int64_t max_size)
      : min_sizes_(std::move(min_sizes)), max_size_(max_size) {}

  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput& input, JointSample& sample) const override {
    const auto pick = static_cast<size_t>(input.rng().next_double() * min_sizes_.size());
    const double min_size = min_sizes_[std::min(pick, min_sizes_.size() - 1)];
    const auto height = static_cast<double>(sample.height);
    const auto width = static_cast<double>(sample.width);
    double r = min_size / std::min(height, width);
    if (max_size_ > 0) r = std::min(r, static_cast<double>(max_size_) / std::max(height, width));
    return resize_joint_sample("random_shortest_size", sample, static_cast<int64_t>(width * r),
                               static_cast<int64_t>(height * r));
  }

 private:
  const std::vector<double> min_sizes_;
  const int64_t max_size_;
};

}  // namespace

OpSpec random_shortest_size() {
  OpSpec op;
  op.name = "random_shortest_size";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kPil;
  op.python_class = "RandomShortestSize";
  op.doc =
      "The sample resized so that its shorter side is one of min_size (drawn), its longer at "
      "most max_size: image PIL's bilinear, masks nearest, boxes scaled (torchvision v2's "
      "RandomShortestSize)";
  op.params = {
      ParamSpec::reals("min_size", {800}, "the shorter sides drawn from", 1, 64)
          .in(1, kMaxImageSize),
      ParamSpec::integer("max_size", 0, "the longer side's limit (0: none)").in(0, kMaxImageSize),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    return std::shared_ptr<const JointOp>(
        std::make_shared<RandomShortestSize>(p.reals("min_size"), p.integer("max_size")));
  };
  return op;
}

}  // namespace stoker::ops
