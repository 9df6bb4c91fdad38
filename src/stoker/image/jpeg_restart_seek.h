#pragma once
// Decoding only the restart intervals a crop touches. libjpeg-turbo 2.1.5 entropy-decodes every
// MCU before the last row it outputs: jpeg_skip_scanlines still Huffman-decodes the rows it
// skips (decode_mcu with a null buffer) and jpeg_crop_scanline only saves the inverse DCT and
// what follows, not the Huffman decoding of the columns beside the crop. A restart marker resets
// the entropy decoder and the DC predictions, so the data between two markers decodes on its
// own. Where restart intervals tile the image (a whole number of MCU rows each, or a whole
// number of them to an MCU row), the intervals covering a rectangle form a JPEG of their own:
// the header with the frame's width and height shrunk to the rectangle's, then each MCU row's
// intervals in order, restart markers renumbered from 0. libjpeg decodes it as if it were a
// whole image, the rectangle's pixels the same as the original's (the rectangle keeps a row and
// column of context on each side, which fancy upsampling reads). transcode_jpeg_for_crops writes
// such markers.

// clang-format off
#include <cstdio>  // before jpeglib.h
#include <jpeglib.h>
// clang-format on

#include <optional>

#include "stoker/image/decode.h"

namespace stoker::image {

// A JPEG stream of the restart intervals holding a rectangle of the original image; its bytes
// live in the DecodeBuffer's stream area.
struct RestartWindow {
  ByteSpan stream;
  JDIMENSION first_row;  // where the stream's image starts in the original, in output pixels
  JDIMENSION first_col;  // at the decode's scale
};

// The stream to decode output columns [col0, col1) of output rows [row0, row1) at scale
// `scale_num`/8 from, if restart markers allow a smaller one than the original: `cinfo` has read
// the header of `bytes` (and nothing more). It starts at the interval holding row0 - 1 and
// column col0 - 1 (the upsampler's context, as in a decode of the whole image), ends, with an
// EOI marker, two intervals of rows below the one holding row1 (the decoder reads ahead of its
// output), and spans the intervals from column col0 - 1's to column col1's. Nothing if the JPEG
// has several scans, no restart markers, or intervals that do not tile the image; if the window
// would be the whole image, or so narrow that libjpeg would upsample its chroma otherwise than
// the original's (2 * max_h_samp_factor output pixels or fewer); if the restart markers before its
// end are out of sequence (missing, duplicated or corrupt: libjpeg decoding from the top
// resynchronises in ways a window would not reproduce); or if the data does not hold the intervals
// (truncated: decoding the original reports it).
std::optional<RestartWindow> seek_restart_window(j_decompress_ptr cinfo, ByteSpan bytes,
                                                 int scale_num, JDIMENSION col0, JDIMENSION col1,
                                                 JDIMENSION row0, JDIMENSION row1,
                                                 DecodeBuffer& buffer);

}  // namespace stoker::image
