// decode_rgb for PNG (decode.h) through libspng: RGB8 straight from libspng (palette expanded,
// alpha dropped, 16-bit samples to their high byte, low bit depths scaled to 0-255), except
// 16-bit gray, which PIL reads as 32-bit integers ("I") and clips to 255 when converting to RGB.
// A non-interlaced PNG is decoded row by row down to the crop's last row; an interlaced one
// whole.
#include <spng.h>

#include <algorithm>

#include "stoker/image/format_decoders.h"
#include "stoker/image/png_reader.h"

namespace stoker::image {
namespace {

// 16-bit gray samples (host-endian, as libspng's SPNG_FMT_PNG gives them) to RGB, clipped to
// 255 as PIL's I -> RGB conversion does.
void gray16_to_rgb(const uint8_t* gray16, uint8_t* rgb, int width) {
  const auto* in = reinterpret_cast<const uint16_t*>(gray16);
  for (int i = 0; i < width; ++i, rgb += 3) {
    const uint8_t v = static_cast<uint8_t>(std::min<uint16_t>(in[i], 255));
    rgb[0] = rgb[1] = rgb[2] = v;
  }
}

}  // namespace

Result<DecodedCrop> decode_png(ByteSpan bytes, const DecodeRequest& request, DecodeBuffer& buffer) {
  STOKER_ASSIGN_OR_RETURN(PngOpened png, open_png(bytes, request.max_pixels));
  spng_ctx* ctx = png.ctx.get();
  const int width = static_cast<int>(png.ihdr.width);
  const int height = static_cast<int>(png.ihdr.height);
  STOKER_ASSIGN_OR_RETURN(const CropRect crop, resolve_crop(request.crop, width, height));
  const bool gray16 = png.ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && png.ihdr.bit_depth == 16;
  const int fmt = gray16 ? SPNG_FMT_PNG : SPNG_FMT_RGB8;
  const size_t decoded_row = size_t(width) * (gray16 ? 2 : 3);
  const size_t stride = size_t(width) * 3;
  uint8_t* pixels = buffer.area(DecodeBuffer::kPixels, stride * crop.height);
  // Row r of the crop goes to pixels + r * stride, its columns where they are in the image.
  auto out_row = [&](int r) { return pixels + size_t(r) * stride; };
  auto convert = [&](const uint8_t* gray, int r) {
    gray16_to_rgb(gray + size_t(crop.x) * 2, out_row(r) + size_t(crop.x) * 3, crop.width);
  };

  int err = 0;
  if (png.ihdr.interlace_method != 0) {
    // Adam7: no row is final before the last pass; decode it all, keep the crop's rows.
    size_t image_bytes = 0;
    err = spng_decoded_image_size(ctx, fmt, &image_bytes);
    uint8_t* image = err == 0 ? buffer.area(DecodeBuffer::kRows, image_bytes) : nullptr;
    if (err == 0) err = spng_decode_image(ctx, image, image_bytes, fmt, 0);
    if (err != 0) return png_error_status(err);
    for (int r = 0; r < crop.height; ++r) {
      const uint8_t* row = image + size_t(crop.y + r) * decoded_row;
      if (gray16) {
        convert(row, r);
      } else {
        std::copy(row, row + stride, out_row(r));
      }
    }
  } else {
    err = spng_decode_image(ctx, nullptr, 0, fmt, SPNG_DECODE_PROGRESSIVE);
    uint8_t* gray_row = gray16 ? buffer.area(DecodeBuffer::kRows, decoded_row) : nullptr;
    // Rows above the crop are decoded into the crop's first row, then overwritten.
    for (int y = 0; err == 0 && y < crop.y + crop.height; ++y) {
      const int r = std::max(0, y - crop.y);
      err = spng_decode_row(ctx, gray16 ? gray_row : out_row(r), decoded_row);
      if (err == SPNG_EOI && y == height - 1) err = 0;
      if (err == 0 && gray16 && y >= crop.y) convert(gray_row, r);
    }
    if (err != 0) return png_error_status(err);
  }
  // A decode down to the last row also reads the chunks after the image data, checking the last
  // IDAT chunk's CRC (PIL does not check IDAT CRCs; stoker does) and the file's end.
  if (crop.y + crop.height == height) {
    err = spng_decode_chunks(ctx);
    if (err != 0) return png_error_status(err);
  }

  DecodedCrop out;
  out.pixels = {pixels + size_t(crop.x) * 3, crop.width, crop.height,
                static_cast<ptrdiff_t>(stride)};
  out.box = {0, 0, double(crop.width), double(crop.height)};
  out.scale_num = 8;
  return out;
}

}  // namespace stoker::image
