// clang-format off
#include "stoker/image/jpeg_decompressor.h"
#include <jerror.h>  // after jpeglib.h
// clang-format on

#include <fmt/format.h>

#include "stoker/image/pixel_cap.h"

namespace stoker::image {
namespace {

struct Call {
  void (*fn)(j_decompress_ptr, void*);
  j_decompress_ptr cinfo;
  void* context;
};

void call(void* p) {
  auto* c = static_cast<Call*>(p);
  c->fn(c->cinfo, c->context);
}

void create(j_decompress_ptr cinfo, void*) { jpeg_create_decompress(cinfo); }

// libjpeg calls this as it reads: stops a decode past the scan limit.
void limit_scans(j_common_ptr common) {
  auto* cinfo = reinterpret_cast<j_decompress_ptr>(common);
  if (cinfo->input_scan_number > kMaxJpegScans) {
    reinterpret_cast<JpegErrors*>(common->err)->too_many_scans = true;
    ERREXIT(common, JERR_NOTIMPL);
  }
}

struct HeaderSource {
  const uint8_t* data;
  unsigned long size;
};

void read_header_from(j_decompress_ptr cinfo, void* p) {
  const auto* source = static_cast<const HeaderSource*>(p);
  jpeg_mem_src(cinfo, source->data, source->size);
  jpeg_read_header(cinfo, TRUE);
}

// Sets every module up without decoding: a single-scan JPEG's jpeg_start_decompress reads no
// image data; a multi-scan one's would read all of it, except in buffered-image mode.
void start_without_data(j_decompress_ptr cinfo, void*) {
  set_rgb_output(cinfo, 8);
  cinfo->buffered_image = jpeg_has_multiple_scans(cinfo);
  jpeg_start_decompress(cinfo);
}

}  // namespace

void set_rgb_output(j_decompress_ptr cinfo, int scale_num) {
  cinfo->out_color_space = cinfo->num_components == 4 ? JCS_CMYK : JCS_RGB;
  cinfo->scale_num = static_cast<unsigned>(scale_num);
  cinfo->scale_denom = 8;
  cinfo->dct_method = JDCT_ISLOW;  // PIL's (and libjpeg's) default
  cinfo->do_fancy_upsampling = TRUE;
}

Status JpegDecompressor::check_decodable() { return run(start_without_data, nullptr); }

JpegDecompressor::JpegDecompressor() {
  init_jpeg_errors(&errors_, reinterpret_cast<j_common_ptr>(&cinfo_));
  Call c{create, &cinfo_, nullptr};
  if (!jpeg_call(&errors_, call, &c)) {
    created_ = jpeg_error_status(errors_);
    return;
  }
  progress_ = {};
  progress_.progress_monitor = limit_scans;
  cinfo_.progress = &progress_;
  arena_.install(&cinfo_);
}

JpegDecompressor::~JpegDecompressor() {
  if (created_.is_ok()) jpeg_destroy_decompress(&cinfo_);
}

Status JpegDecompressor::run(void (*fn)(j_decompress_ptr, void*), void* context) {
  STOKER_RETURN_IF_ERROR(created_);
  Call c{fn, &cinfo_, context};
  if (!jpeg_call(&errors_, call, &c) || errors_.premature_end) return jpeg_error_status(errors_);
  return Status::ok();
}

Status JpegDecompressor::read_header(ByteSpan bytes, int64_t max_pixels) {
  if (created_.is_ok()) {
    jpeg_abort_decompress(&cinfo_);  // frees the last image's pool
    arena_.forget_tables(&cinfo_);   // and its tables: each image as if decoded afresh
  }
  errors_.premature_end = false;
  errors_.too_many_scans = false;
  HeaderSource source{bytes.data, static_cast<unsigned long>(bytes.size)};
  Status status = run(read_header_from, &source);
  // The frame header (SOF) sets the size before the checks at the first scan can fail (e.g.
  // libjpeg's own 65,500-pixel side limit): the pixel cap is the error to report then.
  if (created_.is_ok()) {
    STOKER_RETURN_IF_ERROR(
        check_pixel_cap("JPEG", cinfo_.image_width, cinfo_.image_height, max_pixels));
  }
  STOKER_RETURN_IF_ERROR(status);
  // libjpeg infers grayscale, YCbCr or RGB, CMYK or YCCK from 1, 3 or 4 components; not more.
  if (cinfo_.jpeg_color_space == JCS_UNKNOWN) {
    return unsupported(
        fmt::format("JPEG: {} components of an unknown colour space", cinfo_.num_components));
  }
  return Status::ok();
}

}  // namespace stoker::image
