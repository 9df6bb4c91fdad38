#pragma once
// RgbRowSource: RGB rows delivered top to bottom, a few at a time, into memory the reader
// provides — a decode in progress, read by the resampler without the whole image being
// materialised (resample.h), or into one buffer (decode_rgb).

#include <cstddef>
#include <cstdint>

#include "stoker/util/status.h"

namespace stoker::image {

// Rows of `width` RGB pixels, `height` of them. Each row is written into `row_bytes` bytes of the
// reader's memory, its first pixel at `row_offset` (a decoder may write pixels left of it).
// Thread-compatible: one reader at a time.
class RgbRowSource {
 public:
  virtual ~RgbRowSource() = default;

  // Writes the next `count` rows (1 <= count <= the rows not yet read) to rows[0 .. count), each
  // `row_bytes` bytes. After an error the source is done: no more reads.
  virtual Status read(uint8_t* const* rows, int count) = 0;

  int width = 0;
  int height = 0;
  size_t row_bytes = 0;   // >= row_offset + 3 * width
  size_t row_offset = 0;  // of the first pixel, in bytes
};

}  // namespace stoker::image
