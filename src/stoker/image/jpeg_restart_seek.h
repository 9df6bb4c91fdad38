#pragma once
// Starting a JPEG decode at a restart marker instead of the first row. libjpeg-turbo 2.1.5's
// jpeg_skip_scanlines still entropy-decodes every MCU of the rows it skips (decode_mcu with a
// null buffer); it does not look for restart markers. A restart marker resets the entropy
// decoder and the DC predictions, so the data after one decodes on its own: given the header
// with the frame height shortened by the rows above, followed by that data (restart markers
// renumbered from 0), libjpeg decodes the bottom part of the image as if it were a whole one.
// transcode_jpeg_for_crops writes a restart marker at every MCU row, so a crop's decode starts
// at the MCU row above it.

// clang-format off
#include <cstdio>  // before jpeglib.h
#include <jpeglib.h>
// clang-format on

#include <optional>

#include "stoker/image/decode.h"

namespace stoker::image {

// A JPEG stream of the rows from `first_row` of the original image down: its bytes live in the
// DecodeBuffer's stream area.
struct RestartSeek {
  ByteSpan stream;
  JDIMENSION first_row;  // in output rows at the decode's scale
};

// The stream to decode output rows [row0, row1) at scale `scale_num`/8 from, if restart
// markers allow starting below the first row: `cinfo` has read the header of `bytes` (and
// nothing more). It starts at the restart interval holding row0 - 1 (the row above row0 keeps
// the upsampler's context as in a decode from the top) and ends, with an EOI marker, two
// intervals after the one holding row1 (the decoder reads ahead of its output). Nothing if the
// JPEG has several scans or no restart markers at MCU row boundaries, if row0 lies in the first
// interval, if the restart markers before the rows are out of sequence (corrupt data, which
// libjpeg decodes from the top by resynchronising), or if the data does not hold the intervals
// (truncated: decoding the original reports it).
std::optional<RestartSeek> seek_restart_interval(j_decompress_ptr cinfo, ByteSpan bytes,
                                                 int scale_num, JDIMENSION row0, JDIMENSION row1,
                                                 DecodeBuffer& buffer);

}  // namespace stoker::image
