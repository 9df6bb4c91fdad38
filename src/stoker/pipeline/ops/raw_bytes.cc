// raw_bytes: a bytes field delivered as stored, a variable-length uint8 [N] (a caption, encoded
// bytes), N at most max_length (transform.h, copy_variable_field); a dataset's video field
// (named "video": store/import/video_record.h's video_field, a layer this one does not see),
// which a remote video folder's records fill with references, its video's whole bytes
// (video_field_copy.h; where the video layer is built).
#include <fmt/format.h>

#include "stoker/pipeline/op_registry.h"
#if STOKER_WITH_VIDEO
#include "stoker/pipeline/video_field_copy.h"
#endif

namespace stoker::ops {

OpSpec raw_bytes() {
  OpSpec op;
  op.name = "raw_bytes";
  op.role = OpRole::kSource;
  op.output = SampleType{Layout::kArray, DType::kUint8, true};
  op.backend = OpBackend::kBoth;
  op.doc =
      "Delivers a bytes field as stored (a remote video folder's video: the file's bytes): a "
      "uint8 [N] sample per record, N at most max_length (a longer one is an error naming the "
      "record)";
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
#if STOKER_WITH_VIDEO
    if (context.field == "video") return copy_video_field(f, p.integer("max_length"));
#endif
    return copy_variable_field(f, DType::kUint8, {}, p.integer("max_length"));
  };
  return op;
}

}  // namespace stoker::ops
