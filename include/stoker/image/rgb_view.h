#pragma once
// The pixel types the image layer passes between decode and resample: a borrowed view of 8-bit
// RGB pixels in rows (HWC), a rectangle of whole pixels, and a box in pixel coordinates.

#include <cstddef>
#include <cstdint>

namespace stoker::image {

// Borrowed RGB pixels, 3 bytes per pixel, `height` rows of `width` pixels, row y starting at
// data + y * stride (stride >= 3 * width). Valid while the owner of the pixels lives.
struct RgbView {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  ptrdiff_t stride = 0;

  const uint8_t* row(int y) const { return data + y * stride; }
};

// An integer rectangle of whole pixels: columns [x, x + width), rows [y, y + height).
struct CropRect {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

// A box in pixel coordinates, edges at x0 <= x1 and y0 <= y1; fractional where it comes from a
// scaled decode. Pixel (x, y) covers [x, x + 1) × [y, y + 1) (PIL's convention for resize boxes).
struct PixelBox {
  double x0 = 0;
  double y0 = 0;
  double x1 = 0;
  double y1 = 0;
};

}  // namespace stoker::image
