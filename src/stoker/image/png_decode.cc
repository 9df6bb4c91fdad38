// decode_rgb_rows for PNG (decode.h) through libspng: RGB8 straight from libspng (palette expanded,
// alpha dropped, 16-bit samples to their high byte, low bit depths scaled to 0-255), except
// 16-bit gray, which PIL reads as 32-bit integers ("I") and clips to 255 when converting to RGB.
// A non-interlaced PNG is decoded row by row as the rows are read, down to the crop's last row;
// an interlaced one whole.
#include <spng.h>

#include <algorithm>
#include <string>

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

// A PNG decode read row by row. Non-interlaced: rows decoded as they are read (those above the
// crop into the first row read, then overwritten), and after the crop's last row, if it is the
// image's, the chunks after the image data. Interlaced: decoded whole when opened, copied out.
class PngRows : public DecodedRows {
 public:
  Status read(uint8_t* const* rows, int count) override {
    if (count < 1 || count > crop_.height - next_)
      return invalid_argument("read of " + std::to_string(count) + " rows, " +
                              std::to_string(crop_.height - next_) + " left");
    const Status status = decode(rows, count);
    next_ = status.is_ok() ? next_ + count : crop_.height;
    return status;
  }

  PngOpened png_;
  CropRect crop_;
  int image_height_ = 0;
  bool gray16_ = false;
  size_t decoded_row_ = 0;    // bytes of a row as libspng gives it
  uint8_t* image_ = nullptr;  // interlaced: the whole decoded image; else a gray16 row, if any
  int next_ = 0;              // the crop's next row to read

 private:
  // A row of the crop as libspng gave it at `decoded`, into `out` as RGB (its columns where they
  // are in the image).
  void put(const uint8_t* decoded, uint8_t* out) const {
    if (gray16_) {
      gray16_to_rgb(decoded + size_t(crop_.x) * 2, out + size_t(crop_.x) * 3, crop_.width);
    } else if (decoded != out) {
      std::copy(decoded, decoded + size_t(row_bytes), out);
    }
  }

  Status decode(uint8_t* const* rows, int count) {
    spng_ctx* ctx = png_.ctx.get();
    if (png_.ihdr.interlace_method != 0) {
      for (int i = 0; i < count; ++i)
        put(image_ + size_t(crop_.y + next_ + i) * decoded_row_, rows[i]);
      return Status::ok();
    }
    int err = 0;
    for (int y = next_ == 0 ? 0 : crop_.y + next_; err == 0 && y < crop_.y + next_ + count; ++y) {
      uint8_t* out = rows[std::max(0, y - crop_.y - next_)];
      err = spng_decode_row(ctx, gray16_ ? image_ : out, decoded_row_);
      if (err == SPNG_EOI && y == image_height_ - 1) err = 0;
      if (err == 0 && gray16_ && y >= crop_.y) put(image_, out);
    }
    // A decode down to the last row also reads the chunks after the image data, checking the
    // last IDAT chunk's CRC (PIL does not check IDAT CRCs; stoker does) and the file's end.
    if (err == 0 && crop_.y + next_ + count == image_height_) err = spng_decode_chunks(ctx);
    return err == 0 ? Status::ok() : png_error_status(err);
  }
};

}  // namespace

Result<DecodedRows*> png_rows(ByteSpan bytes, const DecodeRequest& request, DecodeBuffer& buffer) {
  thread_local PngRows rows;
  STOKER_ASSIGN_OR_RETURN(rows.png_, open_png(bytes, request.max_pixels));
  spng_ctx* ctx = rows.png_.ctx.get();
  const spng_ihdr& ihdr = rows.png_.ihdr;
  const int width = static_cast<int>(ihdr.width);
  rows.image_height_ = static_cast<int>(ihdr.height);
  STOKER_ASSIGN_OR_RETURN(rows.crop_, resolve_crop(request.crop, width, rows.image_height_));
  rows.gray16_ = ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth == 16;
  const int fmt = rows.gray16_ ? SPNG_FMT_PNG : SPNG_FMT_RGB8;
  rows.decoded_row_ = size_t(width) * (rows.gray16_ ? 2 : 3);
  rows.next_ = 0;
  rows.image_ = nullptr;
  int err = 0;
  if (ihdr.interlace_method != 0) {
    // Adam7: no row is final before the last pass; decode it all, keep the crop's rows.
    size_t image_bytes = 0;
    err = spng_decoded_image_size(ctx, fmt, &image_bytes);
    if (err == 0) rows.image_ = buffer.area(DecodeBuffer::kRows, image_bytes);
    if (err == 0) err = spng_decode_image(ctx, rows.image_, image_bytes, fmt, 0);
    // The chunks after the image data, as a non-interlaced decode reads them at the last row.
    if (err == 0 && rows.crop_.y + rows.crop_.height == rows.image_height_)
      err = spng_decode_chunks(ctx);
  } else {
    err = spng_decode_image(ctx, nullptr, 0, fmt, SPNG_DECODE_PROGRESSIVE);
    if (rows.gray16_) rows.image_ = buffer.area(DecodeBuffer::kRows, rows.decoded_row_);
  }
  if (err != 0) return png_error_status(err);
  rows.width = rows.crop_.width;
  rows.height = rows.crop_.height;
  rows.row_bytes = size_t(width) * 3;
  rows.row_offset = size_t(rows.crop_.x) * 3;
  rows.box = {0, 0, double(rows.crop_.width), double(rows.crop_.height)};
  rows.scale_num = 8;
  return &rows;
}

}  // namespace stoker::image
