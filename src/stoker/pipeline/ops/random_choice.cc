// random_choice: torchvision's RandomChoice(transforms, p) of pixel operations: one of them,
// operation j with probability p[j] / sum(p) (equal ones when p is empty), applied to the image
// (none: the image as it is). Operations that change the image's size (random_crop) are taken
// where all make one size: the choice is then a ResizingPixelOp of that size.
// One draw from its stream (next_double() * sum(p), against the running sums of p), then the
// chosen operation's own draws (combinator.h). ops/random_choice_test.cc checks the choice's
// frequencies and that the result is the chosen operation's.

#include "stoker/pipeline/ops/combinator.h"

namespace stoker::ops {
namespace {

class RandomChoiceOp : public ResizingPixelOp {
 public:
  RandomChoiceOp(PixelOps ops, ChoiceWeights weights, std::vector<int64_t> shape)
      : ops_(std::move(ops)), weights_(std::move(weights)), shape_(std::move(shape)) {}

  const std::vector<int64_t>& output_shape() const override { return shape_; }

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    if (ops_.empty()) return Status::ok();
    const size_t j = weights_.pick(input);
    return ops_[j]->apply(inner_input(input, j), pixels);
  }

  // Called only where the size changes: every operation is then a ResizingPixelOp of it.
  Status apply_to(const SampleInput& input, const uint8_t* in, uint8_t* out) const override {
    const size_t j = weights_.pick(input);
    return static_cast<const ResizingPixelOp&>(*ops_[j]).apply_to(inner_input(input, j), in, out);
  }

 private:
  PixelOps ops_;
  ChoiceWeights weights_;
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
      ChoiceWeights::param(),
  };
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    std::vector<int64_t> shape;
    Result<PixelOps> ops = make_pixel_ops(params.ops("ops"), context, &shape);
    if (!ops.is_ok()) return ops.status();
    Result<ChoiceWeights> weights =
        ChoiceWeights::make("random_choice", params.reals("p"), ops.value().size());
    if (!weights.is_ok()) return weights.status();
    return std::shared_ptr<const PixelOp>(std::make_shared<const RandomChoiceOp>(
        std::move(ops).value(), std::move(weights).value(), std::move(shape)));
  };
  return op;
}

}  // namespace stoker::ops
