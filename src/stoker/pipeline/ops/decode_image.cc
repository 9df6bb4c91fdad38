// decode_image: an encoded image field (JPEG or PNG) decoded at its own size, uint8 [3, H, W] as
// PIL's Image.open(...).convert("RGB") + PILToTensor give it, with no resize: a variable sample
// (transform.h) of capacity [3, max_size, max_size]; a larger image is an error naming its size.
#include <fmt/format.h>

#include "stoker/image/decode.h"
#include "stoker/image/image_header.h"
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
    Result<image::ImageHeader> header = image::read_image_header(bytes.value());
    if (!header.is_ok()) return header.status();
    const int width = header.value().width;
    const int height = header.value().height;
    if (width > max_size_ || height > max_size_)
      return invalid_argument(
          fmt::format("the image is {}x{}, larger than max_size {}", width, height, max_size_));
    thread_local image::DecodeBuffer buffer;
    Result<image::DecodedCrop> decoded = image::decode_rgb(bytes.value(), {}, buffer);
    if (!decoded.is_ok()) return decoded.status();
    const image::RgbView& rgb = decoded.value().pixels;
    if (rgb.width != width || rgb.height != height)
      return corrupt(fmt::format("the header says {}x{} but the image is {}x{}", width, height,
                                 rgb.width, rgb.height));
    // Interleaved RGB rows to planes [3, H, W].
    const size_t plane = static_cast<size_t>(width) * height;
    for (int y = 0; y < height; ++y) {
      const uint8_t* row = rgb.row(y);
      uint8_t* out = slot + static_cast<size_t>(y) * width;
      for (int x = 0; x < width; ++x) {
        out[x] = row[3 * x];
        out[plane + x] = row[3 * x + 1];
        out[2 * plane + x] = row[3 * x + 2];
      }
    }
    shape[0] = 3;
    shape[1] = height;
    shape[2] = width;
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
