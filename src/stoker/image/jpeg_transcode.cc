#include "stoker/image/jpeg_transcode.h"

// clang-format off
#include "stoker/image/jpeg_decompressor.h"
#include <jerror.h>  // after jpeglib.h
// clang-format on

#include <cstdlib>

namespace stoker::image {
namespace {

// A libjpeg destination writing into one malloc'd buffer that grows by doubling. The buffer
// belongs to this struct (freed with it), so nothing leaks when libjpeg fails half-way.
struct GrowingDestination {
  jpeg_destination_mgr mgr;  // first member: libjpeg holds a jpeg_destination_mgr* to it
  uint8_t* data = nullptr;
  size_t capacity = 0;

  GrowingDestination() = default;
  GrowingDestination(const GrowingDestination&) = delete;
  GrowingDestination& operator=(const GrowingDestination&) = delete;
  ~GrowingDestination() { std::free(data); }

  size_t size() const { return capacity - mgr.free_in_buffer; }
};

void init_destination(j_compress_ptr) {}

boolean grow(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<GrowingDestination*>(cinfo->dest);
  const size_t used = dest->capacity;  // empty_output_buffer: the whole buffer is full
  auto* bigger = static_cast<uint8_t*>(std::realloc(dest->data, used * 2));
  if (bigger == nullptr) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
  dest->data = bigger;
  dest->capacity = used * 2;
  dest->mgr.next_output_byte = bigger + used;
  dest->mgr.free_in_buffer = dest->capacity - used;
  return TRUE;
}

void term_destination(j_compress_ptr) {}

// The compress half; it reports errors through the decompressor's error manager, so that an
// error in either object lands in the one jump target armed by JpegDecompressor::run.
struct Transcode {
  jpeg_compress_struct* dst;
  GrowingDestination* dest;
  bool dst_created;
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
  dst->dest = &t->dest->mgr;
  jpeg_copy_critical_parameters(src, dst);
  dst->optimize_coding = TRUE;
  dst->restart_in_rows = 1;
  jpeg_write_coefficients(dst, coefficients);
  jpeg_finish_compress(dst);
  jpeg_finish_decompress(src);
}

}  // namespace

Result<std::vector<uint8_t>> transcode_jpeg_for_crops(ByteSpan jpeg, int64_t max_pixels) {
  // The header, and whether decode_rgb can decode the source: the transcode only reads the
  // coefficients, which works for JPEGs libjpeg cannot turn into pixels.
  STOKER_ASSIGN_OR_RETURN(const ImageHeader header, read_image_header(jpeg, max_pixels));
  if (header.format != ImageFormat::kJpeg) {
    return invalid_argument("transcode: not a JPEG but a PNG");
  }
  JpegDecompressor src;
  STOKER_RETURN_IF_ERROR(src.read_header(jpeg, max_pixels));

  jpeg_compress_struct dst;
  GrowingDestination dest;
  dest.capacity = jpeg.size + 4096;  // optimised tables make the output about the input's size
  dest.data = static_cast<uint8_t*>(std::malloc(dest.capacity));
  if (dest.data == nullptr) return Status(StatusCode::kInternal, "transcode: out of memory");
  dest.mgr.next_output_byte = dest.data;
  dest.mgr.free_in_buffer = dest.capacity;
  dest.mgr.init_destination = init_destination;
  dest.mgr.empty_output_buffer = grow;
  dest.mgr.term_destination = term_destination;
  Transcode t{&dst, &dest, false, false};
  Status status = src.run(create_destination, &t);
  if (status.is_ok()) status = src.run(transcode, &t);
  if (t.dst_created) jpeg_destroy_compress(&dst);
  STOKER_RETURN_IF_ERROR(status);
  if (t.smoothed) {
    return unsupported(
        "JPEG: progressive scans leave coefficient bits unsent; libjpeg decodes it with block "
        "smoothing, which a baseline copy would lose: keep the original");
  }
  return std::vector<uint8_t>(dest.data, dest.data + dest.size());
}

}  // namespace stoker::image
