#pragma once
// 8-bit grayscale or palette PNGs decoded whole, the masks an importer stores (png_encode.h's
// stacked object masks, class maps): the bytes PIL gives (`np.asarray(Image.open(...))`, mode
// "L", or "P"'s palette indices). Thread-safe: calls share nothing.

#include <cstdint>
#include <vector>

#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::image {

struct GraySize {
  int64_t width = 0, height = 0;
};

// The PNG in `bytes` decoded into `pixels` (resized to height rows of width bytes). Errors (one
// line): not 8-bit grayscale or palette, more than `max_pixels` pixels (refused from its header),
// libspng's.
Result<GraySize> decode_gray_png(ByteSpan bytes, int64_t max_pixels, std::vector<uint8_t>& pixels);

}  // namespace stoker::image
