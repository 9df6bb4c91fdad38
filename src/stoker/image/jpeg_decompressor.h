#pragma once
// JpegDecompressor: owns a jpeg_decompress_struct reading from memory (RAII), runs libjpeg calls
// under jpeg_errors.h's handler and turns what goes wrong into a Status.

#include <cstdint>

#include "stoker/image/jpeg_arena.h"
#include "stoker/image/jpeg_errors.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::image {

// decode_rgb's output settings, as PIL's: RGB (CMYK for 4-component JPEGs, converted to RGB
// by the caller), scale `scale_num`/8, the ISLOW inverse DCT, fancy upsampling. Call between
// jpeg_read_header and jpeg_start_decompress; raises no error.
void set_rgb_output(j_decompress_ptr cinfo, int scale_num);

// Decompressions of JPEGs, one at a time, each of at most kMaxJpegScans (jpeg_errors.h) scans.
// Reusable: each read_header starts over, and the per-image memory comes from its JpegArena,
// so that a decompressor kept for a thread decodes without allocating in steady state. Not
// copyable or movable (libjpeg holds pointers into it). Thread-compatible: one thread at a time.
class JpegDecompressor {
 public:
  JpegDecompressor();
  ~JpegDecompressor();
  JpegDecompressor(const JpegDecompressor&) = delete;
  JpegDecompressor& operator=(const JpegDecompressor&) = delete;

  // Abandons any decompression under way, then reads the markers of `bytes` up to the first scan
  // (jpeg_read_header). `bytes` must outlive the decompression. Fails on a malformed or truncated
  // header and, as soon as the frame's size is known, on more than `max_pixels` pixels, and on a
  // colour space libjpeg does not know (2 or more than 4 components); see read_image_header for the
  // codes.
  Status read_header(ByteSpan bytes, int64_t max_pixels);

  // After read_header: whether libjpeg can decode this JPEG to RGB with decode_rgb's settings
  // (set_rgb_output at 8/8). Starts the decompression without reading image data (a
  // progressive JPEG in buffered-image mode, which allocates, but does not fill, its
  // coefficient buffer), which sets up every module (entropy decoder, upsampler, colour
  // converter) and fails as decoding would on what the header allows but libjpeg cannot do
  // (e.g. "Fractional sampling not implemented yet"). The decompressor can do nothing else
  // afterwards.
  Status check_decodable();

  // Runs fn(cinfo, context) under the error handler; a libjpeg error or a premature end of the
  // data becomes a one-line Status. `fn`'s frame must hold only trivially destructible objects.
  Status run(void (*fn)(j_decompress_ptr cinfo, void* context), void* context);

  j_decompress_ptr cinfo() { return &cinfo_; }

 private:
  JpegErrors errors_;
  JpegArena arena_;
  jpeg_progress_mgr progress_;  // enforces kMaxJpegScans
  jpeg_decompress_struct cinfo_;
  Status created_;  // jpeg_create_decompress's outcome (it fails only when out of memory)
};

}  // namespace stoker::image
