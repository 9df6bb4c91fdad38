#pragma once
// 8-bit grayscale PNGs from pixels in memory, for masks an importer stores (class maps, or a
// detection record's object masks stacked). Lossless: PIL reads back the same bytes
// (`np.asarray(Image.open(...))`, mode "L"). Thread-safe: calls share nothing.

#include <cstdint>
#include <vector>

#include "stoker/util/status.h"

namespace stoker::image {

// The PNG of `height` rows of `width` bytes at `pixels` (row-major), zlib level 6 with
// libspng's filter choice: masks, mostly runs of one value, shrink to a few per cent. Errors
// (one line): a size outside 1..2^31-1 either way, libspng's.
Result<std::vector<uint8_t>> encode_gray_png(const uint8_t* pixels, int64_t width, int64_t height);

}  // namespace stoker::image
