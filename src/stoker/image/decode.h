#pragma once
// Decoding an encoded JPEG or PNG — or only a crop of it — to 8-bit RGB, with the pixels PIL's
// Image.open(...).convert("RGB") gives (what torchvision's ImageFolder reads with): libjpeg with
// its default ISLOW DCT and fancy upsampling, the same libjpeg-turbo PIL links; grayscale
// replicated to R=G=B; CMYK and YCCK JPEGs as PIL converts them (Adobe-inverted samples, then
// PIL's cmyk2rgb); PNG alpha dropped, not composited; 16-bit PNG as PIL reads it (the high byte,
// except 16-bit gray, which PIL reads as 32-bit integers and clips to 255 when converting).
// EXIF orientation is not applied and ICC profiles are ignored, as in PIL's convert("RGB").
// docs/ARCHITECTURE.md ("Image decode") has the details and the tolerance policy.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/image/rgb_row_source.h"
#include "stoker/image/rgb_view.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::image {

struct DecodeRequest {
  // The rectangle of the image to decode; the whole image if unset. Must lie inside the image
  // and not be empty.
  std::optional<CropRect> crop;
  // A reduced DCT scale (JPEG: 1/4 or 1/2, the scales libjpeg-turbo 2.1.5 has SIMD code for) is
  // used only while the scaled crop still covers min_width x min_height pixels; 0, 0 (the
  // default) never scales.
  int min_width = 0;
  int min_height = 0;
  int64_t max_pixels = kDefaultMaxPixels;  // images of more pixels are refused unread
};

// Scratch memory for decode_rgb, reused from call to call: once it has grown to the largest
// image decoded, decoding allocates no pixel memory. The pixels of the last DecodedCrop live
// here until the next decode into this buffer. Thread-compatible: one per thread.
class DecodeBuffer {
 public:
  // The areas the decoders use: the pixels they return, rows to convert (CMYK, 16-bit gray,
  // interlaced PNG), and a JPEG stream re-assembled to start at a restart marker.
  enum Area { kPixels, kRows, kStream, kAreaCount };

  // At least `bytes` bytes of `area`, kept across calls; contents unspecified.
  uint8_t* area(Area area, size_t bytes);
  // Bytes held now, all areas.
  size_t capacity() const;

 private:
  std::vector<uint8_t> areas_[kAreaCount];
};

struct DecodedCrop {
  // RGB pixels covering the requested crop. At scale 8/8 exactly the crop; scaled, the whole
  // scaled pixels the crop touches. Borrowed from the DecodeBuffer.
  RgbView pixels;
  // Where the requested crop lies in `pixels`' coordinates: {0, 0, width, height} at 8/8,
  // fractional when scaled (a scaled pixel covers 8 / scale_num original pixels).
  PixelBox box;
  int scale_num = 8;  // the DCT scale used, in eighths (8, 4 or 2; PNG always 8)
};

// A decode of `request.crop` in progress, read row by row (RgbRowSource): the rows of
// DecodedCrop::pixels, with its box and scale. Reading the last row ends the decode as
// decode_rgb does (a decode down to the image's last row reads on to its end).
class DecodedRows : public RgbRowSource {
 public:
  PixelBox box;       // as DecodedCrop::box
  int scale_num = 8;  // as DecodedCrop::scale_num
};

// decode_rgb's decode, to be read row by row: the header is read and the decoder set up here,
// the rows decoded as they are read (so a consumer can keep only a few of them), with the same
// errors, from header or rows. The source is this thread's, valid until the next decode on this
// thread; its memory comes from `buffer`.
Result<DecodedRows*> decode_rgb_rows(ByteSpan bytes, const DecodeRequest& request,
                                     DecodeBuffer& buffer);

// Decodes `request.crop` of the JPEG or PNG in `bytes` to RGB. A JPEG crop decodes only the
// iMCU columns (jpeg_crop_scanline) and rows it covers: rows above it are skipped
// (jpeg_skip_scanlines; without Huffman decoding where restart markers allow) and decoding stops
// after its last row. A non-interlaced PNG crop decodes the rows down to its last and stops.
// At scale 8/8 the pixels equal the same rectangle of a full decode, byte for byte.
// Errors (one line): those of read_image_header; a crop not inside the image
// (kInvalidArgument); corrupt or truncated data (kCorrupt) — libjpeg's warnings about corrupt
// data are ignored as PIL ignores them, but running out of data is an error, as in PIL ("image
// file is truncated"); PNG CRC errors are errors in every chunk (PIL skips the IDAT CRCs). A
// crop that ends above the last row does not read, so does not check, the data below it.
// Thread-safe: concurrent calls with distinct buffers share nothing.
Result<DecodedCrop> decode_rgb(ByteSpan bytes, const DecodeRequest& request, DecodeBuffer& buffer);

// Where source box `box` (in the full image's pixels, inside `crop`, the rectangle the request
// asked for) lies in the decoded pixels: `decoded` is `crop` in those pixels' coordinates (a
// DecodedCrop's or DecodedRows' box).
PixelBox map_into(const PixelBox& decoded, const CropRect& crop, const PixelBox& box);

}  // namespace stoker::image
