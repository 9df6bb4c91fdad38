#include "stoker/image/jpeg_transcode.h"

#include "stoker/image/jpeg_decompressor.h"
#include "stoker/image/jpeg_memory_destination.h"

namespace stoker::image {
namespace {

// The compress half; it reports errors through the decompressor's error manager, so that an
// error in either object lands in the one jump target armed by JpegDecompressor::run.
struct Transcode {
  jpeg_compress_struct* dst;
  JpegMemoryDestination* dest;
  bool dst_created;
  JDIMENSION restart_span;
  bool smoothed;  // out: the source decodes with block smoothing; nothing written
};

// Whether libjpeg decodes the progressive JPEG whose coefficients `src` has read with block
// smoothing: when its scans leave bits of the first AC coefficients (1 to 9, those libjpeg-turbo
// smooths) unsent. A baseline copy of the coefficients would then decode to other pixels.
bool decodes_with_smoothing(j_decompress_ptr src) {
  if (!src->progressive_mode || src->coef_bits == nullptr) return false;
  for (int c = 0; c < src->num_components; ++c) {
    for (int k = 1; k <= 9; ++k) {
      if (src->coef_bits[c][k] != 0) return true;
    }
  }
  return false;
}

void create_destination(j_decompress_ptr src, void* p) {
  auto* t = static_cast<Transcode*>(p);
  t->dst->err = src->err;
  jpeg_create_compress(t->dst);
  t->dst_created = true;
}

void transcode(j_decompress_ptr src, void* p) {
  auto* t = static_cast<Transcode*>(p);
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(src);
  t->smoothed = decodes_with_smoothing(src);
  if (t->smoothed) return;
  jpeg_compress_struct* dst = t->dst;
  dst->dest = t->dest->mgr();
  jpeg_copy_critical_parameters(src, dst);
  dst->optimize_coding = TRUE;
  dst->restart_interval = crop_restart_interval(src->image_width, src->num_components,
                                                src->max_h_samp_factor, t->restart_span);
  jpeg_write_coefficients(dst, coefficients);
  jpeg_finish_compress(dst);
  jpeg_finish_decompress(src);
}

}  // namespace

Result<std::vector<uint8_t>> transcode_jpeg_for_crops(ByteSpan jpeg, int64_t max_pixels,
                                                      JDIMENSION restart_span) {
  // The header, and whether decode_rgb can decode the source: the transcode only reads the
  // coefficients, which works for JPEGs libjpeg cannot turn into pixels.
  STOKER_ASSIGN_OR_RETURN(const ImageHeader header, read_image_header(jpeg, max_pixels));
  if (header.format != ImageFormat::kJpeg) {
    return invalid_argument("transcode: not a JPEG but a PNG");
  }
  JpegDecompressor src;
  STOKER_RETURN_IF_ERROR(src.read_header(jpeg, max_pixels));

  jpeg_compress_struct dst;
  JpegMemoryDestination dest;
  // Optimised tables make the output about the input's size.
  STOKER_RETURN_IF_ERROR(dest.start(jpeg.size + 4096));
  Transcode t{&dst, &dest, false, restart_span, false};
  Status status = src.run(create_destination, &t);
  if (status.is_ok()) status = src.run(transcode, &t);
  if (t.dst_created) jpeg_destroy_compress(&dst);
  STOKER_RETURN_IF_ERROR(status);
  if (t.smoothed) {
    return unsupported(
        "JPEG: progressive scans leave coefficient bits unsent; libjpeg decodes it with block "
        "smoothing, which a baseline copy would lose: keep the original");
  }
  return dest.bytes();
}

}  // namespace stoker::image
