#pragma once
// The import-time PNG transcode: lossless, to a PNG that decodes about twice as fast. libspng
// (Debian's 0.7.3) undoes the Paeth filter — which encoders such as PIL's choose for most rows
// of a photograph — one byte at a time, and that is about half of a PNG's decode; without it
// (the Sub, Up and Average filters only, zlib level 4) the file is about as small (+3% on the
// bench set) and decodes 2x faster (docs/BENCHMARKS.md). An interlaced PNG also becomes a plain
// one, whose crops decode only down to their last row.

#include <cstdint>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::image {

// The largest transcode kept, relative to the source's size: beyond it the source is stored.
inline constexpr double kMaxPngTranscodeGrowth = 1.10;

// Re-encodes the 8-bit RGB or RGBA PNG in `png` as an 8-bit RGB PNG of the pixels decode_rgb
// gives (alpha dropped, as PIL's convert("RGB") drops it), non-interlaced, with the Sub, Up and
// Average filters. Decoding the result gives the same pixels as decoding `png`, whole or
// cropped, with decode_rgb and with PIL. Errors (one line): read_image_header's and decode_rgb's
// for corrupt or truncated data; kInvalidArgument for a JPEG; kUnsupported (store the source) for
// other colour types and depths (gray, palette, 16-bit: their RGB re-encoding would be larger,
// and 16-bit gray is not what PIL reads from an RGB file) and for a result over
// kMaxPngTranscodeGrowth times the source's size. Thread-safe: concurrent calls share nothing.
Result<std::vector<uint8_t>> transcode_png_for_crops(ByteSpan png,
                                                     int64_t max_pixels = kDefaultMaxPixels);

}  // namespace stoker::image
