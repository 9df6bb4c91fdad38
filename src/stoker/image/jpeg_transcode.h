#pragma once
// The import-time JPEG transcode: lossless (the DCT coefficients are copied, never re-quantised)
// to a file whose crops are cheap to decode — one baseline scan (progressive files become
// baseline: ~3x faster to decode), optimised Huffman tables (smaller), and restart markers
// every few MCUs that divide each MCU row evenly (every 64 px or more; every MCU row where the
// row's MCU count has no such divisor), so that decode_rgb decodes only the restart intervals a
// crop touches instead of Huffman-decoding every MCU before, beside and after it.

#include <cstdint>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/image/jpeg_restart_interval.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::image {

// Transcodes the JPEG in `jpeg` through libjpeg's coefficient API (jpeg_read_coefficients ->
// jpeg_copy_critical_parameters -> jpeg_write_coefficients). Decoding the result gives the
// same pixels as decoding `jpeg`, byte for byte, whole or cropped. Kept: what decoding needs —
// quantisation tables, sampling factors, component ids, and the colour space, written as a JFIF
// marker (gray, YCbCr) or an Adobe marker (RGB, CMYK, YCCK; transform as the source's). Dropped:
// every other marker, EXIF and ICC profiles included (decode_rgb ignores them, as PIL's
// convert("RGB") does). Errors (one line): read_image_header's, and decode_rgb's for corrupt or
// truncated data; kInvalidArgument for a PNG; kUnsupported for a progressive JPEG whose scans
// leave coefficient bits unsent, which libjpeg decodes with block smoothing (rare; a baseline
// copy cannot reproduce it: store the original). `restart_span`: crop_restart_interval's span
// (0: no restart markers; the import always uses the default). Thread-safe: concurrent calls
// share nothing.
Result<std::vector<uint8_t>> transcode_jpeg_for_crops(ByteSpan jpeg,
                                                      int64_t max_pixels = kDefaultMaxPixels,
                                                      JDIMENSION restart_span = kRestartSpan);

}  // namespace stoker::image
