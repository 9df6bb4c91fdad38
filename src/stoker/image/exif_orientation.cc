#include "stoker/image/exif_orientation.h"

#include <cstring>

namespace stoker::image {
namespace {

// A TIFF block's unsigned integers in its byte order.
struct TiffBytes {
  const uint8_t* data;
  size_t size;
  bool big_endian;
  // The `n`-byte integer at `at`, or -1 where it is not inside the block.
  int64_t read(size_t at, int n) const {
    if (at > size || static_cast<size_t>(n) > size - at) return -1;
    int64_t value = 0;
    for (int k = 0; k < n; ++k) {
      const uint8_t byte = data[at + (big_endian ? k : n - 1 - k)];
      value = (value << 8) | byte;
    }
    return value;
  }
};

// The orientation tag of the TIFF block `tiff` of `length` bytes, as exif_orientation's.
int tiff_orientation(const uint8_t* tiff, size_t length) {
  if (length < 8) return -1;
  TiffBytes bytes{tiff, length, false};
  if (std::memcmp(tiff, "MM", 2) == 0) {
    bytes.big_endian = true;
  } else if (std::memcmp(tiff, "II", 2) != 0) {
    return -1;
  }
  constexpr int64_t kTiffMagic = 42;
  if (bytes.read(2, 2) != kTiffMagic) return -1;
  const int64_t ifd = bytes.read(4, 4);
  const int64_t entries = ifd < 0 ? -1 : bytes.read(static_cast<size_t>(ifd), 2);
  if (entries < 0) return -1;
  constexpr int64_t kOrientationTag = 0x0112, kShort = 3, kLong = 4, kEntryBytes = 12;
  for (int64_t e = 0; e < entries; ++e) {
    const auto at = static_cast<size_t>(ifd + 2 + e * kEntryBytes);
    const int64_t tag = bytes.read(at, 2);
    if (tag < 0) return -1;
    if (tag != kOrientationTag) continue;
    const int64_t type = bytes.read(at + 2, 2);
    const int64_t value = type == kShort  ? bytes.read(at + 8, 2)
                          : type == kLong ? bytes.read(at + 8, 4)
                                          : -1;
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 0;
  }
  return 0;
}

// A JPEG's: its first APP1 segment that starts "Exif\0\0", before the first scan.
int jpeg_orientation(ByteSpan jpeg) {
  constexpr uint8_t kApp1 = 0xE1, kStartOfScan = 0xDA, kEnd = 0xD9;
  size_t at = 2;  // after SOI
  while (at + 4 <= jpeg.size) {
    const uint8_t* m = jpeg.data + at;
    if (m[0] != 0xFF) return 0;
    if (m[1] == 0xFF) {  // a fill byte
      ++at;
      continue;
    }
    if (m[1] == kStartOfScan || m[1] == kEnd) return 0;
    if (m[1] == 0x01 || (m[1] >= 0xD0 && m[1] <= 0xD7)) {  // markers without a length
      at += 2;
      continue;
    }
    const size_t length = (size_t{m[2]} << 8) | m[3];
    if (length < 2 || length > jpeg.size - at - 2) return 0;
    constexpr size_t kExif = 6;  // "Exif\0\0"
    if (m[1] == kApp1 && length - 2 >= kExif && std::memcmp(m + 4, "Exif\0\0", kExif) == 0)
      return tiff_orientation(m + 4 + kExif, length - 2 - kExif);
    at += 2 + length;
  }
  return 0;
}

// A PNG's: its first eXIf chunk, wherever it is (PIL reads the chunks after the image data when
// it loads the image).
int png_orientation(ByteSpan png) {
  constexpr size_t kSignature = 8, kChunkFrame = 12;  // length, type, CRC
  for (size_t at = kSignature; at + kChunkFrame <= png.size;) {
    const uint8_t* chunk = png.data + at;
    const size_t length =
        (size_t{chunk[0]} << 24) | (size_t{chunk[1]} << 16) | (size_t{chunk[2]} << 8) | chunk[3];
    if (length > png.size - at - kChunkFrame) return 0;
    if (std::memcmp(chunk + 4, "eXIf", 4) == 0) return tiff_orientation(chunk + 8, length);
    if (std::memcmp(chunk + 4, "IEND", 4) == 0) return 0;
    at += kChunkFrame + length;
  }
  return 0;
}

}  // namespace

int exif_orientation(ByteSpan image) {
  constexpr uint8_t kJpeg[] = {0xFF, 0xD8};
  constexpr uint8_t kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (image.size >= sizeof kJpeg && std::memcmp(image.data, kJpeg, sizeof kJpeg) == 0)
    return jpeg_orientation(image);
  if (image.size >= sizeof kPng && std::memcmp(image.data, kPng, sizeof kPng) == 0)
    return png_orientation(image);
  return 0;
}

}  // namespace stoker::image
