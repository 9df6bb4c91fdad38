#pragma once
// What an encoded image is, read from its first bytes: the format (sniffed from the magic bytes,
// never a file name), the size, the colour model. Cheap: reads the JPEG markers up to the first
// scan or the PNG chunks up to the image data (CRCs checked) and decodes no pixels. It sets a
// JPEG's decoder up, which allocates a few rows of memory (and for a progressive JPEG the
// coefficient buffer, untouched: address space, not memory).

#include <cstdint>

#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::image {

enum class ImageFormat { kJpeg, kPng };

// How the stored samples are to be read. JPEG: the colour space libjpeg infers from the JFIF and
// Adobe markers and the component count. PNG: the IHDR colour type.
enum class ColorModel {
  kGray,       // JPEG grayscale, PNG gray
  kGrayAlpha,  // PNG gray + alpha
  kRgb,        // JPEG stored as RGB (Adobe transform 0), PNG truecolour
  kRgba,       // PNG truecolour + alpha
  kPalette,    // PNG indexed colour
  kYCbCr,      // JPEG YCbCr (the usual colour JPEG)
  kCmyk,       // JPEG CMYK
  kYcck,       // JPEG YCCK (decoded to CMYK)
};

struct ImageHeader {
  ImageFormat format = ImageFormat::kJpeg;
  int width = 0;
  int height = 0;
  int components = 0;  // stored samples per pixel: 1 gray/palette, 2 gray+alpha, 3, 4
  int bit_depth = 8;   // bits per stored sample: JPEG 8; PNG 1, 2, 4, 8 or 16
  ColorModel color = ColorModel::kYCbCr;
  // JPEG: progressive (or multi-scan) coding; PNG: Adam7 interlacing. Either way the whole
  // image must be decoded before any row is final, so a crop decode saves nothing.
  bool progressive = false;
  // JPEG only: MCUs between restart markers, 0 without them (a transcoded file has one restart
  // interval per MCU row).
  int restart_interval = 0;

  int64_t pixels() const { return int64_t{width} * height; }
};

// The decompression-bomb cap: images of more pixels are refused before anything is decoded.
// PIL (what torchvision reads with) refuses images above twice its MAX_IMAGE_PIXELS of
// 89,478,485; stoker takes the same limit, so it opens every image PIL opens. Decoding the
// largest such image takes 537 MB of RGB pixels; callers that know their data set can pass a
// lower cap.
constexpr int64_t kDefaultMaxPixels = 2 * int64_t{89'478'485};

// Reads the header of the JPEG or PNG in `bytes`. Errors (one line): not an image (names what
// the first bytes look like) or empty (kCorrupt); truncated or malformed header, zero width or
// height (kCorrupt); more than `max_pixels` pixels (kUnsupported); a JPEG coding libjpeg cannot
// decode: 12-bit or 16-bit samples, lossless, an unknown colour space, sampling factors its
// upsampler does not handle (kUnsupported), or a corrupt Huffman table (kCorrupt).
// Thread-safe: concurrent calls share nothing.
Result<ImageHeader> read_image_header(ByteSpan bytes, int64_t max_pixels = kDefaultMaxPixels);

// The format of `bytes` from its magic bytes, or a one-line kCorrupt error saying what the first
// bytes look like. Thread-safe.
Result<ImageFormat> sniff_image_format(ByteSpan bytes);

// "JPEG" or "PNG".
const char* format_name(ImageFormat format);

}  // namespace stoker::image
