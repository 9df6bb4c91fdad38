#include "stoker/image/jpeg_encode.h"

#include <fmt/format.h>

#include <string>

#include "stoker/image/jpeg_errors.h"
#include "stoker/image/jpeg_memory_destination.h"
#include "stoker/image/jpeg_restart_interval.h"

namespace stoker::image {
namespace {

struct Encode {
  jpeg_compress_struct* cinfo;
  JpegMemoryDestination* dest;
  const RgbView* pixels;
  int quality;
  bool created;  // out: jpeg_create_compress succeeded
};

void compress(void* p) {
  auto* e = static_cast<Encode*>(p);
  jpeg_compress_struct* cinfo = e->cinfo;
  jpeg_create_compress(cinfo);
  e->created = true;
  cinfo->dest = e->dest->mgr();
  cinfo->image_width = static_cast<JDIMENSION>(e->pixels->width);
  cinfo->image_height = static_cast<JDIMENSION>(e->pixels->height);
  cinfo->input_components = 3;
  cinfo->in_color_space = JCS_RGB;
  // YCbCr, luma sampled 2x2 and chroma 1x1 (4:2:0), a JFIF marker, ISLOW DCT, one scan.
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, e->quality, /*force_baseline=*/TRUE);
  cinfo->optimize_coding = TRUE;
  cinfo->restart_interval = crop_restart_interval(cinfo->image_width, 3, 2);  // 4:2:0
  jpeg_start_compress(cinfo, TRUE);
  while (cinfo->next_scanline < cinfo->image_height) {
    // libjpeg reads the rows without writing them, though its type says otherwise.
    JSAMPROW row = const_cast<JSAMPROW>(e->pixels->row(static_cast<int>(cinfo->next_scanline)));
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
}

}  // namespace

Result<std::vector<uint8_t>> encode_jpeg(const RgbView& pixels, int quality) {
  if (quality < 1 || quality > 100)
    return invalid_argument(fmt::format("JPEG encode: quality {} is not within 1..100", quality));
  if (pixels.data == nullptr || pixels.width < 1 || pixels.height < 1)
    return invalid_argument(
        fmt::format("JPEG encode: empty image ({}x{})", pixels.width, pixels.height));
  if (pixels.width > kMaxJpegSide || pixels.height > kMaxJpegSide)
    return invalid_argument(fmt::format("JPEG encode: {}x{} has a side over JPEG's {}",
                                        pixels.width, pixels.height, kMaxJpegSide));
  if (pixels.stride < 3 * static_cast<ptrdiff_t>(pixels.width))
    return invalid_argument(
        fmt::format("JPEG encode: stride {} is below 3 x width {}", pixels.stride, pixels.width));
  JpegMemoryDestination dest;
  // About 2 bits per pixel, what quality 90 takes for photographs; it grows as needed.
  STOKER_RETURN_IF_ERROR(dest.start(static_cast<size_t>(pixels.width) * pixels.height / 4 + 4096));
  jpeg_compress_struct cinfo;
  JpegErrors errors;
  init_jpeg_errors(&errors, reinterpret_cast<j_common_ptr>(&cinfo));
  Encode e{&cinfo, &dest, &pixels, quality, false};
  const bool ok = jpeg_call(&errors, compress, &e);
  if (e.created) jpeg_destroy_compress(&cinfo);
  if (!ok) return Status(StatusCode::kInternal, std::string("JPEG encode: ") + errors.message);
  return dest.bytes();
}

}  // namespace stoker::image
