#pragma once
// Test fixtures: small JPEGs and PNGs encoded in memory (libjpeg, libspng), with pixels that
// vary in both directions so that crops and colour conversions are visible. Test-only.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoker/util/byte_span.h"

namespace stoker::image::testing {

// The bytes of an encoded image as the decoders take them.
inline ByteSpan span(const std::vector<uint8_t>& bytes) { return {bytes.data(), bytes.size()}; }

struct JpegSpec {
  int width = 64;
  int height = 48;
  int components = 3;  // 1 gray, 3 YCbCr, 4 CMYK (Adobe, inverted as Photoshop and PIL write)
  int h_sampling = 2;  // luma sampling factors: 2x2 is 4:2:0, 2x1 4:2:2, 1x1 4:4:4
  int v_sampling = 2;
  int quality = 90;
  bool progressive = false;
  bool arithmetic = false;
  int restart_rows = 0;  // restart marker every this many MCU rows; 0 for none
  int restart_mcus = 0;  // else every this many MCUs; 0 for none
  bool ycck = false;     // 4 components stored as YCCK (Adobe transform 2)
  bool adobe_marker = true;
  // Progressive, with a scan script that never sends the AC coefficients' last bit (legal:
  // libjpeg decodes such a file with block smoothing). 3 components only.
  bool partial_scans = false;
};

// The pixels the fixtures encode: `components` bytes per pixel, row-major.
std::vector<uint8_t> pattern_pixels(int width, int height, int components);

// A JPEG of pattern_pixels. Throws std::runtime_error with libjpeg's message where it refused
// the spec (or this libjpeg fails: an empty fixture would fail later, far from the cause).
std::vector<uint8_t> encode_jpeg(const JpegSpec& spec);

struct PngSpec {
  int width = 40;
  int height = 30;
  int color_type = 2;  // PNG colour type: 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA
  int bit_depth = 8;
  bool interlaced = false;
};

// A PNG of pattern pixels (a palette of up to 16 colours for type 3); empty if libspng refused it.
std::vector<uint8_t> encode_png(const PngSpec& spec);

// Big-endian u16/u32 writes into a byte vector, for patching headers.
void put_u16_be(std::vector<uint8_t>& bytes, size_t at, uint16_t value);
void put_u32_be(std::vector<uint8_t>& bytes, size_t at, uint32_t value);

// Recomputes the CRC of the PNG chunk starting (at its length field) at `chunk_at`.
void fix_png_crc(std::vector<uint8_t>& bytes, size_t chunk_at);

// The offset of the first JPEG marker 0xFF `marker` (its 0xFF byte), or SIZE_MAX.
size_t find_jpeg_marker(const std::vector<uint8_t>& bytes, uint8_t marker);

}  // namespace stoker::image::testing
