// random_resized_crop: torchvision's RandomResizedCrop (+ RandomHorizontalFlip) of an encoded
// image, the training transform (image_transforms.h).
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/resize_backend.h"

namespace stoker::ops {

OpSpec random_resized_crop() {
  OpSpec op;
  op.name = "random_resized_crop";
  op.role = OpRole::kSource;
  op.backend = OpBackend::kPil;
  op.doc =
      "Decodes a random crop of a JPEG/PNG field and resizes it to size x width "
      "(torchvision's RandomResizedCrop, PIL's antialiased bilinear or bicubic), flipped with "
      "probability flip";
  const double max_side = kMaxImageSize;
  op.params = {
      ParamSpec::integer("size", 224, "the output's height, and its width unless width is set")
          .in(1, max_side),
      ParamSpec::integer("width", 0, "the output's width (0: size, a square)").in(0, max_side),
      ParamSpec::reals("scale", {0.08, 1.0},
                       "smallest and largest crop area, as fractions of the image's", 2, 2)
          .above(0),
      ParamSpec::reals("ratio", {3.0 / 4.0, 4.0 / 3.0},
                       "smallest and largest aspect ratio (width / height)", 2, 2)
          .above(0),
      ParamSpec::real("flip", 0.0, "probability of a horizontal flip").in(0, 1),
      ParamSpec::choice(
          "interpolation", "bilinear", {"bilinear", "bicubic", "random"},
          "the resize filter, PIL's (random: bilinear or bicubic per sample, timm's)"),
      resize_backend_param(),
      ParamSpec::flag(
          "dct_scaling", false,
          "the fast mode: large JPEG crops decoded at 1/2 or 1/4 scale (pixels differ slightly)"),
  };
  op.make_source = [](const Params& p, const SourceContext& context) {
    ImageOutput output = context.output;
    output.size = static_cast<int>(p.integer("size"));
    output.width = static_cast<int>(p.integer("width"));
    output.dct_scaling = p.flag("dct_scaling");
    output.interpolation = interpolation_named(p.choice("interpolation"));
    output.backend = resize_backend(p);
    RandomCropOptions options;
    options.crop = {p.reals("scale")[0], p.reals("scale")[1], p.reals("ratio")[0],
                    p.reals("ratio")[1]};
    options.flip_probability = p.real("flip");
    return random_resized_crop_transform(*context.schema, context.field, output, options);
  };
  return op;
}

}  // namespace stoker::ops
