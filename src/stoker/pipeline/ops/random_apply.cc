// random_apply: torchvision's RandomApply(transforms, p) of pixel operations: with probability p
// all of them, in order. One draw from its stream (next_double() < p), then each operation's own
// draws (combinator.h). ops/random_choice_test.cc checks it beside random_choice.

#include "stoker/pipeline/ops/combinator.h"

namespace stoker::ops {
namespace {

class RandomApplyOp : public PixelOp {
 public:
  RandomApplyOp(PixelOps ops, double p) : ops_(std::move(ops)), p_(p) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    if (!(input.rng().next_double() < p_)) return Status::ok();
    for (size_t j = 0; j < ops_.size(); ++j)
      STOKER_RETURN_IF_ERROR(ops_[j]->apply(inner_input(input, j), pixels));
    return Status::ok();
  }

 private:
  PixelOps ops_;
  double p_;
};

}  // namespace

OpSpec random_apply() {
  OpSpec op;
  op.name = "random_apply";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomApply";
  op.doc = "The pixel operations ops, in order, with probability p (torchvision's RandomApply)";
  op.params = {
      ParamSpec::ops("ops", "the operations, [NAME:key=value;NAME] (none: the image as it is)", 64),
      ParamSpec::real("p", 0.5, "probability of applying them").in(0, 1),
  };
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    Result<PixelOps> ops = make_pixel_ops(params.ops("ops"), context);
    if (!ops.is_ok()) return ops.status();
    return std::shared_ptr<const PixelOp>(
        std::make_shared<const RandomApplyOp>(std::move(ops).value(), params.real("p")));
  };
  return op;
}

}  // namespace stoker::ops
