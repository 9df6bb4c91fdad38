// random_source_choice: torchvision's RandomChoice(transforms, p) of decoding crops (for
// instance RandomResizedCrops of other scales, or one and Resize + CenterCrop): one of the
// decoding operations, operation j with probability p[j] / sum(p) (equal ones when p is empty),
// makes the sample. Every operation must make one dtype and shape (a batch stacks them).
// One draw from the sample's source stream (next_double() * sum(p), against the running sums of
// p), then the chosen operation's own draws from its stream, derive_stream(step, j + 1) as in
// combinator.h. ops/random_source_choice_test.cc checks that the sample is the chosen
// operation's and the choice's frequencies.

#include <fmt/format.h>

#include <algorithm>

#include "stoker/pipeline/ops/combinator.h"

namespace stoker::ops {
namespace {

class RandomSourceChoice : public Transform {
 public:
  RandomSourceChoice(std::vector<std::shared_ptr<const Transform>> sources, ChoiceWeights weights)
      : sources_(std::move(sources)), weights_(std::move(weights)) {}

  DType dtype() const override { return sources_.front()->dtype(); }
  std::vector<int64_t> sample_shape() const override { return sources_.front()->sample_shape(); }
  size_t record_prefix() const override {
    size_t prefix = 0;
    for (const auto& source : sources_) {
      if (source->record_prefix() == 0) return 0;  // one reads an unknown length
      prefix = std::max(prefix, source->record_prefix());
    }
    return prefix;
  }

  Status apply(const SampleInput& input, uint8_t* slot) const override {
    const size_t j = weights_.pick(input);
    return sources_[j]->apply(inner_input(input, j), slot);
  }

 private:
  const std::vector<std::shared_ptr<const Transform>> sources_;
  const ChoiceWeights weights_;
};

}  // namespace

OpSpec random_source_choice() {
  OpSpec op;
  op.name = "random_source_choice";
  op.role = OpRole::kSource;
  op.backend = OpBackend::kPil;
  op.python_class = "RandomChoice";
  op.doc =
      "One of the decoding operations ops (crops of one output size), picked with the weights p "
      "(equal when empty), as torchvision's RandomChoice of RandomResizedCrops";
  op.params = {
      ParamSpec::source_ops("ops", "the decoding operations, [NAME:key=value;NAME]", 64),
      ChoiceWeights::param(),
  };
  op.make_source = [](const Params& params,
                      const SourceContext& context) -> Result<std::shared_ptr<const Transform>> {
    Result<std::vector<OpCall>> calls = parse_op_list(params.ops("ops"), OpRole::kSource);
    if (!calls.is_ok()) return calls.status();
    const auto fail = [&](const std::string& message) {
      return invalid_argument(
          fmt::format("field '{}': random_source_choice: {}", context.field, message));
    };
    if (calls.value().empty()) return fail("it needs at least one operation");
    Result<ChoiceWeights> weights =
        ChoiceWeights::make("random_source_choice", params.reals("p"), calls.value().size());
    if (!weights.is_ok()) return weights.status();
    std::vector<std::shared_ptr<const Transform>> sources;
    for (const OpCall& call : calls.value()) {
      Result<std::shared_ptr<const Transform>> made = call.op->make_source(call.params, context);
      if (!made.is_ok()) return made.status();
      const Transform& source = *made.value();
      if (source.as_variable())
        return fail(fmt::format("{} makes samples of varying size: the choice makes one size",
                                call.op->name));
      const Transform& first = sources.empty() ? source : *sources.front();
      if (source.sample_shape() != first.sample_shape() || source.dtype() != first.dtype())
        return fail(fmt::format("{} makes {} {}, {} makes {} {}: its operations make one size",
                                calls.value().front().op->name, dtype_name(first.dtype()),
                                fmt::join(first.sample_shape(), " x "), call.op->name,
                                dtype_name(source.dtype()),
                                fmt::join(source.sample_shape(), " x ")));
      sources.push_back(made.value());
    }
    return std::shared_ptr<const Transform>(
        std::make_shared<const RandomSourceChoice>(std::move(sources), std::move(weights).value()));
  };
  return op;
}

}  // namespace stoker::ops
