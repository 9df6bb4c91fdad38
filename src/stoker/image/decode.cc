#include "stoker/image/decode.h"

#include <fmt/format.h>

#include "stoker/image/format_decoders.h"

namespace stoker::image {

uint8_t* DecodeBuffer::area(Area area, size_t bytes) {
  std::vector<uint8_t>& memory = areas_[area];
  if (memory.size() < bytes) memory.resize(bytes);
  return memory.data();
}

size_t DecodeBuffer::capacity() const {
  size_t bytes = 0;
  for (const std::vector<uint8_t>& memory : areas_) bytes += memory.capacity();
  return bytes;
}

Result<CropRect> resolve_crop(const std::optional<CropRect>& crop, int width, int height) {
  if (!crop) return CropRect{0, 0, width, height};
  const CropRect& c = *crop;
  if (c.width <= 0 || c.height <= 0 || c.x < 0 || c.y < 0 || c.x > width - c.width ||
      c.y > height - c.height) {
    return invalid_argument(fmt::format("crop {}x{} at ({}, {}) is not inside the {}x{} image",
                                        c.width, c.height, c.x, c.y, width, height));
  }
  return c;
}

Result<DecodedCrop> decode_rgb(ByteSpan bytes, const DecodeRequest& request, DecodeBuffer& buffer) {
  STOKER_ASSIGN_OR_RETURN(const ImageFormat format, sniff_image_format(bytes));
  return format == ImageFormat::kJpeg ? decode_jpeg(bytes, request, buffer)
                                      : decode_png(bytes, request, buffer);
}

PixelBox map_into(const DecodedCrop& decoded, const CropRect& crop, const PixelBox& box) {
  const double sx = (decoded.box.x1 - decoded.box.x0) / crop.width;
  const double sy = (decoded.box.y1 - decoded.box.y0) / crop.height;
  return {decoded.box.x0 + (box.x0 - crop.x) * sx, decoded.box.y0 + (box.y0 - crop.y) * sy,
          decoded.box.x0 + (box.x1 - crop.x) * sx, decoded.box.y0 + (box.y1 - crop.y) * sy};
}

}  // namespace stoker::image
