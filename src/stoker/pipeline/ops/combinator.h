#pragma once
// What the combinators (ops/random_choice.cc, ops/random_apply.cc) share: their operations, made
// from a kOps parameter ("[NAME:key=value;NAME]", op_registry.h) for the field, and the input
// each one sees. Operation j inside a combinator that runs as step s of a field draws from
// step derive_stream(s, j + 1) of the sample (rng.h), a stream of its own: its draws are those
// it would make standing alone with that stream.

#include <fmt/format.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/util/rng.h"

namespace stoker::ops {

using PixelOps = std::vector<std::shared_ptr<const PixelOp>>;

// Each call of `list` made for `context`; the first factory's error (it names the field). With
// `shape` null, the first operation that changes the image's size is an error (random_apply's
// keep it: not applied, the image stays); else the operations may change it if all make one
// size (ResizingPixelOp, op_registry.h), written to *shape (the input's if none changes it), and
// two sizes are an error.
inline Result<PixelOps> make_pixel_ops(const std::string& list, const PixelContext& context,
                                       std::vector<int64_t>* shape = nullptr) {
  Result<std::vector<OpCall>> calls = parse_op_list(list);
  if (!calls.is_ok()) return calls.status();
  PixelOps made;
  std::string first_name;
  for (const OpCall& call : calls.value()) {
    Result<std::shared_ptr<const PixelOp>> op = call.op->make_pixel(call.params, context);
    if (!op.is_ok()) return op.status();
    const std::vector<int64_t>& made_shape = output_shape(*op.value(), context.shape);
    if (shape == nullptr && made_shape != context.shape)
      return invalid_argument(
          fmt::format("field '{}': {} changes the image's size: a combinator's operations keep it",
                      context.field, call.op->name));
    if (shape != nullptr && made.empty()) {
      *shape = made_shape;
      first_name = call.op->name;
    } else if (shape != nullptr && made_shape != *shape) {
      return invalid_argument(fmt::format(
          "field '{}': {} makes images {} x {}, {} makes {} x {}: a combinator's operations make "
          "one size",
          context.field, first_name, (*shape)[1], (*shape)[2], call.op->name, made_shape[1],
          made_shape[2]));
    }
    made.push_back(std::move(op).value());
  }
  if (shape != nullptr && made.empty()) *shape = context.shape;
  return made;
}

// The random choices' weights (random_choice, random_source_choice): parameter p, and the draw
// of operation j with probability p[j] / sum(p), one next_double() of the combinator's stream
// against the running sums.
class ChoiceWeights {
 public:
  static ParamSpec param() {
    return ParamSpec::reals("p", {}, "each operation's weight (empty: equal)", 0, 64).at_least(0);
  }

  // The weights p of `op` for `count` operations (equal ones when p is empty); a one-line
  // error for another number of weights or weights that sum to 0.
  static Result<ChoiceWeights> make(const char* op, std::vector<double> p, size_t count) {
    if (p.empty()) p.assign(count, 1.0);
    if (p.size() != count)
      return invalid_argument(
          fmt::format("{}: p has {} weights for {} operations", op, p.size(), count));
    std::partial_sum(p.begin(), p.end(), p.begin());
    if (!p.empty() && !(p.back() > 0))
      return invalid_argument(fmt::format("{}: the weights p sum to 0", op));
    return ChoiceWeights(std::move(p));
  }

  size_t pick(const SampleInput& input) const {
    const double u = input.rng().next_double() * sums_.back();
    size_t j = 0;
    while (j + 1 < sums_.size() && !(u < sums_[j])) ++j;
    return j;
  }

 private:
  explicit ChoiceWeights(std::vector<double> sums) : sums_(std::move(sums)) {}
  std::vector<double> sums_;  // running sums of the weights
};

// Operation j's input inside a combinator called with `input`.
inline SampleInput inner_input(const SampleInput& input, size_t j) {
  SampleInput inner = input;
  inner.step = derive_stream(input.step, j + 1);
  return inner;
}

}  // namespace stoker::ops
