#pragma once
// COCO's masks: an object's segmentation (polygons, or run-length counts plain or as COCO's
// compact string) turned into the pixels pycocotools' maskApi gives (`frPyObjects`, `merge`,
// `decode`), which torchvision's detection reference and its v2 COCO wrapper use. A run-length
// mask counts alternating runs of 0 and 1 down the columns (column-major), starting with 0s.
//
// Where pycocotools reads malformed input without a check (counts that do not cover the image,
// a string that overflows, a polygon of fewer than 3 points), these refuse it with a one-line
// kInvalidArgument; the caller adds file and annotation. Pure functions: thread-safe.

#include <cstdint>
#include <string_view>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// Largest mask (height × width) run-length counts describe: pycocotools' counts are uint32.
inline constexpr int64_t kMaxMaskPixels = int64_t{1} << 31;
// Largest |coordinate| of a polygon's point, in pixels.
inline constexpr double kMaxPolygonCoordinate = double{1 << 20};

struct RunLengthMask {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint32_t> counts;  // runs of 0, 1, 0, ... down the columns; they sum to h × w
};

// A polygon x0, y0, x1, y1, ... (pixel coordinates, at least 3 points) rasterised as
// pycocotools' rleFrPoly does (its boundary traced at 5× and sampled at pixel centres).
Result<RunLengthMask> mask_from_polygon(const std::vector<double>& xy, int64_t height,
                                        int64_t width);
// Plain counts (COCO's uncompressed RLE, `{"counts": [..], "size": [h, w]}`): their sum must
// be height × width.
Result<RunLengthMask> mask_from_counts(const std::vector<int64_t>& counts, int64_t height,
                                       int64_t width);
// COCO's compact string of counts (6 bits a character from '0', deltas after the second run),
// as pycocotools' rleFrString reads it; the counts must sum to height × width.
Result<RunLengthMask> mask_from_string(std::string_view text, int64_t height, int64_t width);

// Sets to 1 the pixels of `mask` in `pixels`: height × width bytes, row-major (y, then x), so
// several masks painted into one buffer are their union (pycocotools' merge).
void paint_mask(const RunLengthMask& mask, uint8_t* pixels);

}  // namespace stoker
