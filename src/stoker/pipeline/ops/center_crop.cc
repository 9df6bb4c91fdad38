// center_crop: torchvision's Resize (with max_size) + CenterCrop (zero padding where the crop
// is larger) of an encoded image, the evaluation transform (image_transforms.h).
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/resize_backend.h"

namespace stoker::ops {

OpSpec center_crop() {
  OpSpec op;
  op.name = "center_crop";
  op.role = OpRole::kSource;
  op.backend = OpBackend::kPil;
  op.doc =
      "Decodes a JPEG/PNG field, resizes its shorter side to resize and crops the central "
      "size x width (torchvision's Resize + CenterCrop, PIL's antialiased bilinear or bicubic)";
  const double max_side = kMaxImageSize;
  op.params = {
      ParamSpec::integer("size", 224, "the output's height, and its width unless width is set")
          .in(1, max_side),
      ParamSpec::integer("width", 0, "the output's width (0: size, a square)").in(0, max_side),
      ParamSpec::integer(
          "resize", 0,
          "the shorter side before the crop (0: size x 256 / 224; below the crop, the "
          "crop zero-padded)")
          .in(0, max_side),
      ParamSpec::integer("max_size", 0,
                         "the longer side's limit after the resize, above resize (0: none; "
                         "torchvision's Resize max_size, the crop zero-padded where larger)")
          .in(0, max_side),
      ParamSpec::choice("interpolation", "bilinear", {"bilinear", "bicubic"},
                        "the resize filter, PIL's"),
      resize_backend_param(),
      ParamSpec::flag(
          "dct_scaling", false,
          "the fast mode: large JPEGs decoded at 1/2 or 1/4 scale (pixels differ slightly)"),
  };
  op.make_source = [](const Params& p, const SourceContext& context) {
    ImageOutput output = context.output;
    output.size = static_cast<int>(p.integer("size"));
    output.width = static_cast<int>(p.integer("width"));
    output.dct_scaling = p.flag("dct_scaling");
    output.interpolation = interpolation_named(p.choice("interpolation"));
    output.backend = resize_backend(p);
    return center_crop_transform(*context.schema, context.field, output,
                                 static_cast<int>(p.integer("resize")),
                                 static_cast<int>(p.integer("max_size")));
  };
  return op;
}

}  // namespace stoker::ops
