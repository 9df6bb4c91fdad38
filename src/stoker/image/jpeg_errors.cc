#include "stoker/image/jpeg_errors.h"

// clang-format off
#include <cstdio>
#include <jerror.h>
// clang-format on

#include <string>

namespace stoker::image {
namespace {

void error_exit(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void emit_message(j_common_ptr cinfo, int msg_level) {
  // msg_level -1 is a warning; 0 and above are trace messages. Nothing is printed.
  if (msg_level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    reinterpret_cast<JpegErrors*>(cinfo->err)->premature_end = true;
  }
}

void output_message(j_common_ptr) {}

bool is_unsupported(int msg_code) {
  switch (msg_code) {
    case JERR_BAD_PRECISION:
    case JERR_SOF_UNSUPPORTED:
    case JERR_NOT_COMPILED:
    case JERR_ARITH_NOTIMPL:
    case JERR_IMAGE_TOO_BIG:
    case JERR_CONVERSION_NOTIMPL:
    case JERR_FRACT_SAMPLE_NOTIMPL:
      return true;
    default:
      return false;
  }
}

}  // namespace

void init_jpeg_errors(JpegErrors* errors, jpeg_common_struct* common) {
  common->err = jpeg_std_error(&errors->mgr);
  errors->mgr.error_exit = error_exit;
  errors->mgr.emit_message = emit_message;
  errors->mgr.output_message = output_message;
  errors->premature_end = false;
  errors->too_many_scans = false;
  errors->message[0] = '\0';
}

bool jpeg_call(JpegErrors* errors, void (*fn)(void* context), void* context) {
  if (setjmp(errors->jump)) return false;
  fn(context);
  return true;
}

Status jpeg_error_status(const JpegErrors& errors) {
  // Running out of data usually surfaces as a later error (no image, bad marker): the
  // truncation is the cause to report.
  if (errors.premature_end) return corrupt("JPEG: truncated (premature end of data)");
  if (errors.too_many_scans) {
    return unsupported("JPEG: more than " + std::to_string(kMaxJpegScans) + " scans");
  }
  const std::string message = std::string("JPEG: ") + errors.message;
  return is_unsupported(errors.mgr.msg_code) ? unsupported(message) : corrupt(message);
}

}  // namespace stoker::image
