#pragma once
// libspng behind RAII and errors as values: a decoding context over bytes in memory, with
// stoker's limits set, its header read and the pixel cap checked.

#include <spng.h>

#include <cstdint>
#include <memory>

#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::image {

struct SpngFree {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
// Owns a libspng context. Thread-compatible.
using SpngContext = std::unique_ptr<spng_ctx, SpngFree>;

// A PNG whose chunks have been read up to the image data.
struct PngOpened {
  SpngContext ctx;
  spng_ihdr ihdr;
};

// Opens the PNG in `bytes` (which must outlive the context) and reads its chunks up to the image
// data: chunk sizes limited (no ancillary chunk above 16 MiB, 64 MiB of them in all), CRC errors
// in any chunk are errors, and an image of more than `max_pixels` pixels is refused from IHDR,
// before anything else is read or allocated.
Result<PngOpened> open_png(ByteSpan bytes, int64_t max_pixels);

// The one-line kCorrupt Status for libspng error `err` ("PNG: <what libspng says>", or
// "PNG: truncated ..." when the data ran out).
Status png_error_status(int err);

}  // namespace stoker::image
