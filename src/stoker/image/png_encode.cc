#include "stoker/image/png_encode.h"

#include <fmt/format.h>
#include <spng.h>

#include <cstdlib>
#include <memory>

#include "stoker/image/png_reader.h"

namespace stoker::image {

Result<std::vector<uint8_t>> encode_gray_png(const uint8_t* pixels, int64_t width, int64_t height) {
  constexpr int64_t kMaxSide = (int64_t{1} << 31) - 1;  // PNG's limit
  if (width < 1 || height < 1 || width > kMaxSide || height > kMaxSide)
    return invalid_argument(fmt::format("PNG: a {}x{} image cannot be a PNG", width, height));
  const SpngContext ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) return png_error_status(SPNG_EMEM);
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(width);
  ihdr.height = static_cast<uint32_t>(height);
  ihdr.bit_depth = 8;
  ihdr.color_type = SPNG_COLOR_TYPE_GRAYSCALE;
  int err = spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  if (err == 0) err = spng_set_option(ctx.get(), SPNG_IMG_COMPRESSION_LEVEL, 6);
  if (err == 0) err = spng_set_ihdr(ctx.get(), &ihdr);
  if (err == 0) {
    err = spng_encode_image(ctx.get(), pixels, static_cast<size_t>(width * height), SPNG_FMT_PNG,
                            SPNG_ENCODE_FINALIZE);
  }
  size_t size = 0;
  const std::unique_ptr<void, decltype(&std::free)> out(
      err == 0 ? spng_get_png_buffer(ctx.get(), &size, &err) : nullptr, &std::free);
  if (err != 0 || !out) return corrupt(std::string("PNG encode: ") + spng_strerror(err));
  const auto* bytes = static_cast<const uint8_t*>(out.get());
  return std::vector<uint8_t>(bytes, bytes + size);
}

}  // namespace stoker::image
