// decode_image: an encoded image field (JPEG or PNG) decoded at its own size, uint8 [3, H, W] as
// PIL's Image.open(...).convert("RGB") + PILToTensor give it, with no resize: a variable sample
// (transform.h) of capacity [3, max_size, max_size]; a larger image is an error naming its size.
#include <fmt/format.h>

#include "stoker/pipeline/image_planes.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/store/record_view.h"

namespace stoker::ops {
namespace {

class DecodeImage : public VariableTransform {
 public:
  DecodeImage(int field, int64_t max_size) : field_(field), max_size_(max_size) {}
  DType dtype() const override { return DType::kUint8; }
  std::vector<int64_t> sample_shape() const override { return {3, max_size_, max_size_}; }
  Status apply_sized(const SampleInput& input, uint8_t* slot, int64_t* shape) const override {
    Result<ByteSpan> bytes = variable_field(*input.schema, input.record, field_);
    if (!bytes.is_ok()) return bytes.status();
    Result<PlanesSize> size = image_size_within(bytes.value(), max_size_);
    if (!size.is_ok()) return size.status();
    if (Status s = decode_planes(bytes.value(), size.value(), slot); !s.is_ok()) return s;
    shape[0] = 3;
    shape[1] = size.value().height;
    shape[2] = size.value().width;
    return Status::ok();
  }

 private:
  const int field_;
  const int64_t max_size_;
};

}  // namespace

OpSpec decode_image() {
  OpSpec op;
  op.name = "decode_image";
  op.role = OpRole::kSource;
  op.output = SampleType{Layout::kImage, DType::kUint8, true};
  op.backend = OpBackend::kBoth;
  op.doc =
      "Decodes a JPEG/PNG field at its own size, uint8 [3, H, W] (PIL's RGB pixels, no resize); "
      "H and W at most max_size, a larger image is an error naming the record";
  op.params = {
      ParamSpec::integer("max_size", 1024,
                         "the largest height and width, which size the batch's slots")
          .in(1, kMaxImageSize),
  };
  op.make_source = [](const Params& p,
                      const SourceContext& context) -> Result<std::shared_ptr<const Transform>> {
    const int f = context.schema->find(context.field);
    if (f < 0 || context.schema->fields()[f].is_fixed())
      return invalid_argument(fmt::format(
          "field '{}': decode_image reads a stored bytes field of encoded images", context.field));
    return std::shared_ptr<const Transform>(
        std::make_shared<DecodeImage>(f, p.integer("max_size")));
  };
  return op;
}

}  // namespace stoker::ops
