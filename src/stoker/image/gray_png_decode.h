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

// The PNG in `bytes`, which must be `expected` in size, decoded into `pixels` (resized to its
// height rows of width bytes). Errors (one line): another size (kInvalidArgument, from its
// header, before anything is decoded), not 8-bit grayscale or palette, libspng's.
Status decode_gray_png(ByteSpan bytes, GraySize expected, std::vector<uint8_t>& pixels);

}  // namespace stoker::image
