#pragma once
// Encoding RGB pixels as a JPEG, for images made smaller at import (`stoker convert imagefolder
// --max-side`). The output is already what the import-time transcode (jpeg_transcode.h) makes
// of a JPEG: baseline, optimised Huffman tables, its restart intervals — so crops of it decode
// cheaply and it needs no second pass.

#include <cstdint>
#include <vector>

#include "stoker/image/rgb_view.h"
#include "stoker/util/status.h"

namespace stoker::image {

// The largest side a JPEG may have (libjpeg's JPEG_MAX_DIMENSION).
inline constexpr int kMaxJpegSide = 65500;

// Encodes `pixels` (8-bit RGB) with libjpeg's compressor: YCbCr with 4:2:0 chroma subsampling, a
// JFIF marker, the standard quantisation tables scaled to `quality` (libjpeg's and PIL's 1..100
// scale; baseline tables), the ISLOW forward DCT, optimised Huffman tables and the transcode's
// restart interval. Errors (one line): kInvalidArgument for a quality outside 1..100, a
// null or empty view, a side above kMaxJpegSide or a stride below 3 * width; kInternal when
// libjpeg fails (out of memory). Thread-safe: concurrent calls share nothing.
Result<std::vector<uint8_t>> encode_jpeg(const RgbView& pixels, int quality);

}  // namespace stoker::image
