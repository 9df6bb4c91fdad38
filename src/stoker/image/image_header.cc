#include "stoker/image/image_header.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "stoker/image/jpeg_decompressor.h"
#include "stoker/image/png_reader.h"

namespace stoker::image {
namespace {

constexpr uint8_t kJpegMagic[] = {0xFF, 0xD8, 0xFF};
constexpr uint8_t kPngMagic[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

template <size_t N>
bool starts_with(ByteSpan bytes, const uint8_t (&magic)[N]) {
  return bytes.size >= N && std::memcmp(bytes.data, magic, N) == 0;
}

bool starts_with(ByteSpan bytes, const char* text) {
  const size_t n = std::strlen(text);
  return bytes.size >= n && std::memcmp(bytes.data, text, n) == 0;
}

// What the first bytes of a file that is neither JPEG nor PNG look like, for the error message.
std::string describe_start(ByteSpan bytes) {
  std::string hex;
  for (size_t i = 0; i < bytes.size && i < 8; ++i) {
    hex += fmt::format("{}{:02x}", i ? " " : "", bytes.data[i]);
  }
  const char* kind = nullptr;
  if (starts_with(bytes, "GIF8")) {
    kind = "a GIF";
  } else if (starts_with(bytes, "BM")) {
    kind = "a BMP";
  } else if (starts_with(bytes, "RIFF") && bytes.size >= 12 &&
             std::memcmp(bytes.data + 8, "WEBP", 4) == 0) {
    kind = "a WebP";
  } else if (starts_with(bytes, "II*") || starts_with(bytes, "MM")) {
    kind = "a TIFF";
  } else if (bytes.size >= 2 && bytes.data[0] == 0xFF && bytes.data[1] == 0xD8) {
    kind = "a JPEG start without a marker after it";
  }
  return kind ? fmt::format("{} ({})", hex, kind) : hex;
}

ColorModel jpeg_color(J_COLOR_SPACE space) {
  switch (space) {
    case JCS_GRAYSCALE:
      return ColorModel::kGray;
    case JCS_RGB:
      return ColorModel::kRgb;
    case JCS_CMYK:
      return ColorModel::kCmyk;
    case JCS_YCCK:
      return ColorModel::kYcck;
    default:
      return ColorModel::kYCbCr;
  }
}

Result<ImageHeader> jpeg_header(ByteSpan bytes, int64_t max_pixels) {
  JpegDecompressor jpeg;
  STOKER_RETURN_IF_ERROR(jpeg.read_header(bytes, max_pixels));
  jpeg_decompress_struct& cinfo = *jpeg.cinfo();
  const bool multiple_scans = jpeg_has_multiple_scans(&cinfo) != 0;
  STOKER_RETURN_IF_ERROR(jpeg.check_decodable());
  ImageHeader header;
  header.format = ImageFormat::kJpeg;
  header.width = static_cast<int>(cinfo.image_width);
  header.height = static_cast<int>(cinfo.image_height);
  header.components = cinfo.num_components;
  header.bit_depth = cinfo.data_precision;
  header.color = jpeg_color(cinfo.jpeg_color_space);
  header.progressive = multiple_scans;
  header.restart_interval = static_cast<int>(cinfo.restart_interval);
  return header;
}

ColorModel png_color(uint8_t color_type) {
  switch (color_type) {
    case SPNG_COLOR_TYPE_GRAYSCALE:
      return ColorModel::kGray;
    case SPNG_COLOR_TYPE_GRAYSCALE_ALPHA:
      return ColorModel::kGrayAlpha;
    case SPNG_COLOR_TYPE_INDEXED:
      return ColorModel::kPalette;
    case SPNG_COLOR_TYPE_TRUECOLOR_ALPHA:
      return ColorModel::kRgba;
    default:
      return ColorModel::kRgb;
  }
}

int png_components(ColorModel color) {
  switch (color) {
    case ColorModel::kGrayAlpha:
      return 2;
    case ColorModel::kRgb:
      return 3;
    case ColorModel::kRgba:
      return 4;
    default:
      return 1;
  }
}

Result<ImageHeader> png_header(ByteSpan bytes, int64_t max_pixels) {
  STOKER_ASSIGN_OR_RETURN(PngOpened png, open_png(bytes, max_pixels));
  ImageHeader header;
  header.format = ImageFormat::kPng;
  header.width = static_cast<int>(png.ihdr.width);
  header.height = static_cast<int>(png.ihdr.height);
  header.color = png_color(png.ihdr.color_type);
  header.components = png_components(header.color);
  header.bit_depth = png.ihdr.bit_depth;
  header.progressive = png.ihdr.interlace_method != 0;
  return header;
}

}  // namespace

const char* format_name(ImageFormat format) {
  return format == ImageFormat::kJpeg ? "JPEG" : "PNG";
}

Result<ImageFormat> sniff_image_format(ByteSpan bytes) {
  if (bytes.size == 0) return corrupt("empty file, not an image");
  if (starts_with(bytes, kJpegMagic)) return ImageFormat::kJpeg;
  if (starts_with(bytes, kPngMagic)) return ImageFormat::kPng;
  return corrupt("not a JPEG or PNG image: starts with " + describe_start(bytes));
}

Result<ImageHeader> read_image_header(ByteSpan bytes, int64_t max_pixels) {
  STOKER_ASSIGN_OR_RETURN(const ImageFormat format, sniff_image_format(bytes));
  return format == ImageFormat::kJpeg ? jpeg_header(bytes, max_pixels)
                                      : png_header(bytes, max_pixels);
}

}  // namespace stoker::image
