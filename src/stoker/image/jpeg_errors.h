#pragma once
// libjpeg with errors as values. libjpeg reports an error by calling error_exit, which must not
// return (its default exits the process); here it longjmps back to jpeg_call, which returns
// false. A longjmp skips the destructors of everything between, so every function run under
// jpeg_call keeps only trivially destructible objects in its frame: the C++ objects that own
// libjpeg state (JpegDecompressor, the transcoder's) live in the callers, outside the jump.
//
// Warnings are ignored, as PIL ignores them (libjpeg recovers from corrupt entropy-coded data
// by filling with grey and resynchronising at the next marker) — except a premature end of the
// data: PIL refuses a truncated file ("image file is truncated"), and so do we.

// clang-format off
#include <cstdio>  // before jpeglib.h, which uses FILE and size_t
#include <jpeglib.h>
// clang-format on

#include <csetjmp>

#include "stoker/util/status.h"

namespace stoker::image {

// At most this many scans are read (JpegDecompressor): each scan of a progressive JPEG passes
// over the whole image's coefficients, so a small file of many (repeated) scans would keep a
// decoder busy for minutes. libjpeg-turbo's own fuzzers stop at 500; encoders write about 10.
constexpr int kMaxJpegScans = 500;

// libjpeg's error manager plus the jump target and what the last error said.
struct JpegErrors {
  jpeg_error_mgr mgr;  // first member: libjpeg holds a jpeg_error_mgr* to this struct
  std::jmp_buf jump;
  bool premature_end = false;   // libjpeg ran out of data (and made up an end of image)
  bool too_many_scans = false;  // stopped by the scan limit (JpegDecompressor)
  char message[JMSG_LENGTH_MAX] = {};
};

// Fills `errors` and points `common->err` at it; call before jpeg_create_(de)compress.
void init_jpeg_errors(JpegErrors* errors, jpeg_common_struct* common);

// Calls fn(context) with the jump target armed. Returns false if libjpeg raised an error inside
// (errors->message says which). `fn` must keep only trivially destructible objects in its
// frame. Not reentrant for one JpegErrors.
bool jpeg_call(JpegErrors* errors, void (*fn)(void* context), void* context);

// The one-line Status for a jpeg_call that returned false or that saw a premature end:
// kUnsupported for codings this libjpeg cannot decode (12-bit samples, lossless) and for more
// scans than the limit, else kCorrupt.
Status jpeg_error_status(const JpegErrors& errors);

}  // namespace stoker::image
