// random_choice: torchvision's RandomChoice(transforms, p) of pixel operations: one of them,
// operation j with probability p[j] / sum(p) (equal ones when p is empty), applied to the image
// (none: the image as it is). Operations that change the image's size (random_crop) are taken
// where all make one size: the choice is then a ResizingPixelOp of that size.
// One draw from its stream (next_double() * sum(p), against the running sums of p), then the
// chosen operation's own draws (combinator.h). ops/random_choice_test.cc checks the choice's
// frequencies and that the result is the chosen operation's.

#include <numeric>

#include "stoker/pipeline/ops/combinator.h"

namespace stoker::ops {
namespace {

class RandomChoiceOp : public ResizingPixelOp {
 public:
  RandomChoiceOp(PixelOps ops, std::vector<double> weights, std::vector<int64_t> shape)
      : ops_(std::move(ops)), sums_(std::move(weights)), shape_(std::move(shape)) {
    std::partial_sum(sums_.begin(), sums_.end(), sums_.begin());
  }

  const std::vector<int64_t>& output_shape() const override { return shape_; }

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    if (ops_.empty()) return Status::ok();
    const size_t j = chosen(input);
    return ops_[j]->apply(inner_input(input, j), pixels);
  }

  // Called only where the size changes: every operation is then a ResizingPixelOp of it.
  Status apply_to(const SampleInput& input, const uint8_t* in, uint8_t* out) const override {
    const size_t j = chosen(input);
    return static_cast<const ResizingPixelOp&>(*ops_[j]).apply_to(inner_input(input, j), in, out);
  }

 private:
  size_t chosen(const SampleInput& input) const {
    const double u = input.rng().next_double() * sums_.back();
    size_t j = 0;
    while (j + 1 < sums_.size() && !(u < sums_[j])) ++j;
    return j;
  }

  PixelOps ops_;
  std::vector<double> sums_;  // running sums of the weights
  const std::vector<int64_t> shape_;
};

}  // namespace

OpSpec random_choice() {
  OpSpec op;
  op.name = "random_choice";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomChoice";
  op.doc =
      "One of the pixel operations ops, picked with the weights p (equal when empty), as "
      "torchvision's RandomChoice";
  op.params = {
      ParamSpec::ops("ops", "the operations, [NAME:key=value;NAME] (none: the image as it is)", 64),
      ParamSpec::reals("p", {}, "each operation's weight (empty: equal)", 0, 64).at_least(0),
  };
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    std::vector<int64_t> shape;
    Result<PixelOps> ops = make_pixel_ops(params.ops("ops"), context, &shape);
    if (!ops.is_ok()) return ops.status();
    std::vector<double> weights = params.reals("p");
    if (weights.empty()) weights.assign(ops.value().size(), 1.0);
    if (weights.size() != ops.value().size())
      return invalid_argument(fmt::format("random_choice: p has {} weights for {} operations",
                                          weights.size(), ops.value().size()));
    if (!weights.empty() && !(std::accumulate(weights.begin(), weights.end(), 0.0) > 0))
      return invalid_argument("random_choice: the weights p sum to 0");
    return std::shared_ptr<const PixelOp>(std::make_shared<const RandomChoiceOp>(
        std::move(ops).value(), std::move(weights), std::move(shape)));
  };
  return op;
}

}  // namespace stoker::ops
