#include "stoker/image/decode.h"

#include <fmt/format.h>

#include <algorithm>

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

Result<DecodedRows*> decode_rgb_rows(ByteSpan bytes, const DecodeRequest& request,
                                     DecodeBuffer& buffer) {
  STOKER_ASSIGN_OR_RETURN(const ImageFormat format, sniff_image_format(bytes));
  return format == ImageFormat::kJpeg ? jpeg_rows(bytes, request, buffer)
                                      : png_rows(bytes, request, buffer);
}

Result<DecodedCrop> decode_rgb(ByteSpan bytes, const DecodeRequest& request, DecodeBuffer& buffer) {
  STOKER_ASSIGN_OR_RETURN(DecodedRows* const rows, decode_rgb_rows(bytes, request, buffer));
  uint8_t* const pixels = buffer.area(DecodeBuffer::kPixels, rows->row_bytes * rows->height);
  constexpr int kBatch = 16;  // rows per read
  uint8_t* at[kBatch];
  for (int y = 0; y < rows->height; y += kBatch) {
    const int count = std::min(kBatch, rows->height - y);
    for (int i = 0; i < count; ++i) at[i] = pixels + size_t(y + i) * rows->row_bytes;
    STOKER_RETURN_IF_ERROR(rows->read(at, count));
  }
  DecodedCrop out;
  out.pixels = {pixels + rows->row_offset, rows->width, rows->height,
                static_cast<ptrdiff_t>(rows->row_bytes)};
  out.box = rows->box;
  out.scale_num = rows->scale_num;
  return out;
}

PixelBox map_into(const PixelBox& decoded, const CropRect& crop, const PixelBox& box) {
  const double sx = (decoded.x1 - decoded.x0) / crop.width;
  const double sy = (decoded.y1 - decoded.y0) / crop.height;
  return {decoded.x0 + (box.x0 - crop.x) * sx, decoded.y0 + (box.y0 - crop.y) * sy,
          decoded.x0 + (box.x1 - crop.x) * sx, decoded.y0 + (box.y1 - crop.y) * sy};
}

}  // namespace stoker::image
