#pragma once
// What the combinators (ops/random_choice.cc, ops/random_apply.cc) share: their operations, made
// from a kOps parameter ("[NAME:key=value;NAME]", op_registry.h) for the field, and the input
// each one sees. Operation j inside a combinator that runs as step s of a field draws from
// step derive_stream(s, j + 1) of the sample (rng.h), a stream of its own: its draws are those
// it would make standing alone with that stream.

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/util/rng.h"

namespace stoker::ops {

using PixelOps = std::vector<std::shared_ptr<const PixelOp>>;

// Each call of `list` made for `context`; the first factory's error (it names the field), or
// the first operation that changes the image's size (a combinator's keep it).
inline Result<PixelOps> make_pixel_ops(const std::string& list, const PixelContext& context) {
  Result<std::vector<OpCall>> calls = parse_op_list(list);
  if (!calls.is_ok()) return calls.status();
  PixelOps made;
  for (const OpCall& call : calls.value()) {
    Result<std::shared_ptr<const PixelOp>> op = call.op->make_pixel(call.params, context);
    if (!op.is_ok()) return op.status();
    if (output_shape(*op.value(), context.shape) != context.shape)
      return invalid_argument(
          fmt::format("field '{}': {} changes the image's size: a combinator's operations keep it",
                      context.field, call.op->name));
    made.push_back(std::move(op).value());
  }
  return made;
}

// Operation j's input inside a combinator called with `input`.
inline SampleInput inner_input(const SampleInput& input, size_t j) {
  SampleInput inner = input;
  inner.step = derive_stream(input.step, j + 1);
  return inner;
}

}  // namespace stoker::ops
