#pragma once
// The restart interval stoker writes into JPEGs (the import's transcode and encoder): the fewest
// whole MCUs spanning at least a span of pixels (kRestartSpan by default) that divide an MCU row
// evenly, so that every MCU row holds the same intervals and decode_rgb decodes only those a
// crop touches (jpeg_restart_seek.h); a whole MCU row where no shorter divisor exists. The span
// trades file size (a marker, its padding and DC values coded afresh: a few bytes an interval)
// for the Huffman decoding a crop skips beside it; any restart interval also keeps libjpeg-turbo
// 2.1 off its fast Huffman path (docs/BENCHMARKS.md measures all three).

// clang-format off
#include <cstdio>  // before jpeglib.h
#include <jpeglib.h>
// clang-format on

namespace stoker::image {

inline constexpr JDIMENSION kRestartSpan = 64;

// For an image `width` pixels wide of `components` components, the largest horizontal sampling
// factor `max_h`: the interval in MCUs (an interleaved scan's MCU is max_h blocks wide, a
// one-component scan's one block); 0 (no restart markers) for a span of 0.
inline unsigned int crop_restart_interval(JDIMENSION width, int components, int max_h,
                                          JDIMENSION span = kRestartSpan) {
  if (span == 0) return 0;
  const JDIMENSION mcu_width = DCTSIZE * static_cast<JDIMENSION>(components == 1 ? 1 : max_h);
  const JDIMENSION per_row = (width + mcu_width - 1) / mcu_width;
  for (JDIMENSION k = (span + mcu_width - 1) / mcu_width; k < per_row; ++k) {
    if (per_row % k == 0) return k;
  }
  return per_row;
}

}  // namespace stoker::image
