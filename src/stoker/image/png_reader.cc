#include "stoker/image/png_reader.h"

#include "stoker/image/pixel_cap.h"

namespace stoker::image {
namespace {

constexpr size_t kChunkLimit = size_t{16} << 20;       // any one ancillary chunk
constexpr size_t kChunkCacheLimit = size_t{64} << 20;  // all ancillary chunks kept

}  // namespace

Status png_error_status(int err) {
  if (err == SPNG_IO_EOF) return corrupt("PNG: truncated (premature end of data)");
  return corrupt(std::string("PNG: ") + spng_strerror(err));
}

Result<PngOpened> open_png(ByteSpan bytes, int64_t max_pixels) {
  PngOpened png{SpngContext(spng_ctx_new(0)), {}};
  if (!png.ctx) return png_error_status(SPNG_EMEM);
  spng_ctx* ctx = png.ctx.get();
  int err = spng_set_png_buffer(ctx, bytes.data, bytes.size);
  if (err == 0) err = spng_set_crc_action(ctx, SPNG_CRC_ERROR, SPNG_CRC_ERROR);
  if (err == 0) err = spng_set_chunk_limits(ctx, kChunkLimit, kChunkCacheLimit);
  if (err == 0) err = spng_get_ihdr(ctx, &png.ihdr);
  if (err != 0) return png_error_status(err);
  STOKER_RETURN_IF_ERROR(check_pixel_cap("PNG", png.ihdr.width, png.ihdr.height, max_pixels));
  // The chunks up to the image data (PLTE, tRNS, ...), their CRCs checked (libspng reads IHDR
  // without its CRC).
  err = spng_decode_chunks(ctx);
  if (err != 0) return png_error_status(err);
  return png;
}

}  // namespace stoker::image
