// raw_bytes: a bytes field delivered as stored, a variable-length uint8 [N] (a caption, encoded
// bytes), N at most max_length (transform.h, copy_variable_field).
#include <fmt/format.h>

#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

OpSpec raw_bytes() {
  OpSpec op;
  op.name = "raw_bytes";
  op.role = OpRole::kSource;
  op.output = SampleType{Layout::kArray, DType::kUint8, true};
  op.backend = OpBackend::kBoth;
  op.doc =
      "Delivers a bytes field as stored: a uint8 [N] sample per record, N at most max_length "
      "(a longer one is an error naming the record)";
  op.params = {
      ParamSpec::integer("max_length", 4096, "the longest value, which sizes the batch's slots")
          .in(1, double{int64_t{1} << 31}),
  };
  op.make_source = [](const Params& p,
                      const SourceContext& context) -> Result<std::shared_ptr<const Transform>> {
    const int f = context.schema->find(context.field);
    if (f < 0 || context.schema->fields()[f].is_fixed())
      return invalid_argument(
          fmt::format("field '{}': raw_bytes reads a stored bytes field", context.field));
    return copy_variable_field(f, DType::kUint8, {}, p.integer("max_length"));
  };
  return op;
}

}  // namespace stoker::ops
