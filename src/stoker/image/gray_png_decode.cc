#include "stoker/image/gray_png_decode.h"

#include <fmt/format.h>

#include "stoker/image/png_reader.h"

namespace stoker::image {

Status decode_gray_png(ByteSpan bytes, GraySize expected, std::vector<uint8_t>& pixels) {
  // No pixel cap here: a PNG of another size is refused from its header, below.
  STOKER_ASSIGN_OR_RETURN(PngOpened png, open_png(bytes, int64_t{1} << 62));
  const spng_ihdr& ihdr = png.ihdr;
  if (ihdr.width != expected.width || ihdr.height != expected.height)
    return invalid_argument(fmt::format("PNG: {}x{}, not {}x{}", ihdr.width, ihdr.height,
                                        expected.width, expected.height));
  const bool one_byte =
      ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE || ihdr.color_type == SPNG_COLOR_TYPE_INDEXED;
  if (!one_byte || ihdr.bit_depth != 8)
    return corrupt(fmt::format("PNG: colour type {} of {} bits, not 8-bit grayscale or palette",
                               ihdr.color_type, ihdr.bit_depth));
  size_t size = 0;
  int err = spng_decoded_image_size(png.ctx.get(), SPNG_FMT_PNG, &size);
  if (err == 0) {
    pixels.resize(size);
    err = spng_decode_image(png.ctx.get(), pixels.data(), size, SPNG_FMT_PNG, 0);
  }
  if (err == 0) err = spng_decode_chunks(png.ctx.get());
  return err == 0 ? Status::ok() : png_error_status(err);
}

}  // namespace stoker::image
