// resize: torchvision's Resize alone (with max_size) of an encoded image, no crop: each sample
// at its own resized size, a variable field (image_transforms.h's resize_transform).
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/resize_backend.h"

namespace stoker::ops {

OpSpec resize() {
  OpSpec op;
  op.name = "resize";
  op.role = OpRole::kSource;
  op.backend = OpBackend::kPil;
  op.doc =
      "Decodes a JPEG/PNG field and resizes its shorter side to size (torchvision's Resize "
      "alone, PIL's antialiased bilinear or bicubic): uint8 [3, H, W] of varying H and W";
  const double max_side = kMaxImageSize;
  op.params = {
      ParamSpec::integer("size", 256, "the shorter side").in(1, max_side),
      ParamSpec::integer("max_size", 0,
                         "the longer side's limit, above size (0: none; torchvision's max_size)")
          .in(0, max_side),
      ParamSpec::integer("capacity", 0,
                         "the largest side the batch's slots hold (0: max_size, else 4 x size); "
                         "a larger resized image is an error naming the record")
          .in(0, max_side),
      ParamSpec::choice("interpolation", "bilinear", {"bilinear", "bicubic"},
                        "the resize filter, PIL's"),
      resize_backend_param(),
  };
  op.make_source = [](const Params& p, const SourceContext& context) {
    const int64_t size = p.integer("size");
    const int64_t max_size = p.integer("max_size");
    int64_t capacity = p.integer("capacity");
    if (capacity == 0)
      capacity = max_size != 0 ? max_size : std::min<int64_t>(4 * size, kMaxImageSize);
    ImageOutput output = context.output;
    output.uint8 = true;
    output.size = static_cast<int>(capacity);
    output.width = 0;
    output.interpolation = interpolation_named(p.choice("interpolation"));
    output.backend = resize_backend(p);
    return resize_transform(*context.schema, context.field, output, static_cast<int>(size),
                            static_cast<int>(max_size));
  };
  return op;
}

}  // namespace stoker::ops
