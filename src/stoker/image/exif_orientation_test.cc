#include "stoker/image/exif_orientation.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/testing/test_images.h"

namespace stoker::image::test {
namespace {

using Bytes = std::vector<uint8_t>;

// `n`-byte integer `value` in the byte order of a TIFF block that starts "MM" (big) or "II".
void put(Bytes& out, uint32_t value, int n, bool big) {
  for (int k = 0; k < n; ++k)
    out.push_back(static_cast<uint8_t>(value >> (8 * (big ? n - 1 - k : k))));
}

using Entries = std::vector<std::array<uint32_t, 3>>;

// A TIFF block whose first IFD, at `ifd`, holds `entries` (tag, type, value): a SHORT's value in
// the first two bytes of its field, as TIFF stores it.
Bytes tiff_block(bool big, const Entries& entries, uint32_t ifd = 8) {
  Bytes tiff = {static_cast<uint8_t>(big ? 'M' : 'I'), static_cast<uint8_t>(big ? 'M' : 'I')};
  put(tiff, 42, 2, big);
  put(tiff, ifd, 4, big);
  put(tiff, static_cast<uint32_t>(entries.size()), 2, big);
  for (const auto& entry : entries) {
    put(tiff, entry[0], 2, big);
    put(tiff, entry[1], 2, big);
    put(tiff, 1, 4, big);
    if (entry[1] == 3) {
      put(tiff, entry[2], 2, big);
      put(tiff, 0, 2, big);
    } else {
      put(tiff, entry[2], 4, big);
    }
  }
  put(tiff, 0, 4, big);  // no next IFD
  return tiff;
}

// A JPEG `jpeg` with an APP1 Exif segment of `tiff` after its SOI.
Bytes with_exif(const Bytes& jpeg, const Bytes& tiff) {
  Bytes segment = {'E', 'x', 'i', 'f', 0, 0};
  segment.insert(segment.end(), tiff.begin(), tiff.end());
  const size_t length = segment.size() + 2;
  Bytes out = {jpeg[0],
               jpeg[1],
               0xFF,
               0xE1,
               static_cast<uint8_t>(length >> 8),
               static_cast<uint8_t>(length & 0xFF)};
  out.insert(out.end(), segment.begin(), segment.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

Bytes with_exif(const Bytes& jpeg, bool big, const Entries& entries, uint32_t ifd = 8) {
  return with_exif(jpeg, tiff_block(big, entries, ifd));
}

// A PNG `png` with an eXIf chunk of `tiff` before its IEND chunk (its CRC not computed: the
// reader does not check it, as PIL does not for ancillary chunks).
Bytes with_png_exif(const Bytes& png, const Bytes& tiff) {
  Bytes chunk;
  put(chunk, static_cast<uint32_t>(tiff.size()), 4, true);
  chunk.insert(chunk.end(), {'e', 'X', 'I', 'f'});
  chunk.insert(chunk.end(), tiff.begin(), tiff.end());
  put(chunk, 0, 4, true);
  Bytes out(png.begin(), png.end() - 12);  // up to IEND
  out.insert(out.end(), chunk.begin(), chunk.end());
  out.insert(out.end(), png.end() - 12, png.end());
  return out;
}

TEST(ExifOrientationTest, ReadsTheTagInEitherByteOrderAndType) {
  const Bytes jpeg = testing::encode_jpeg({16, 8});
  EXPECT_EQ(exif_orientation(testing::span(jpeg)), 0);  // no Exif segment
  for (bool big : {false, true}) {
    EXPECT_EQ(exif_orientation(testing::span(with_exif(jpeg, big, {{0x0112, 3, 6}}))), 6);
    EXPECT_EQ(exif_orientation(testing::span(with_exif(jpeg, big, {{0x0112, 4, 8}}))), 8);
    // Among other tags; a value PIL's exif_transpose ignores is none.
    EXPECT_EQ(
        exif_orientation(testing::span(with_exif(jpeg, big, {{0x010F, 3, 1}, {0x0112, 3, 3}}))), 3);
    EXPECT_EQ(exif_orientation(testing::span(with_exif(jpeg, big, {{0x0112, 3, 9}}))), 0);
    EXPECT_EQ(exif_orientation(testing::span(with_exif(jpeg, big, {{0x010F, 3, 1}}))), 0);
  }
}

TEST(ExifOrientationTest, APngsExifChunkAfterItsImageData) {
  const Bytes png = testing::encode_png({16, 8});
  EXPECT_EQ(exif_orientation(testing::span(png)), 0);
  EXPECT_EQ(exif_orientation(testing::span(with_png_exif(png, tiff_block(true, {{0x0112, 3, 5}})))),
            5);
  EXPECT_EQ(exif_orientation(testing::span(with_png_exif(png, {'I', 'I'}))), -1);
  const Bytes not_an_image = {'G', 'I', 'F', '8', '9', 'a', 0, 0};
  EXPECT_EQ(exif_orientation(testing::span(not_an_image)), 0);
}

TEST(ExifOrientationTest, AnExifSegmentThatCannotBeReadIsMinusOne) {
  const Bytes jpeg = testing::encode_jpeg({16, 8});
  // Its first IFD outside the segment.
  EXPECT_EQ(exif_orientation(testing::span(with_exif(jpeg, false, {{0x0112, 3, 6}}, 4000))), -1);
  // Neither byte order.
  Bytes bad = with_exif(jpeg, false, {{0x0112, 3, 6}});
  bad[12] = 'X';
  EXPECT_EQ(exif_orientation(testing::span(bad)), -1);
  // Cut before its segment's end: no segment read; from there on, its orientation.
  const Bytes whole = with_exif(jpeg, false, {{0x0112, 3, 6}});
  const size_t end = 4 + ((size_t{whole[4]} << 8) | whole[5]);
  for (size_t size = 0; size < end; ++size)
    EXPECT_EQ(exif_orientation({whole.data(), size}), 0) << size;
  EXPECT_EQ(exif_orientation({whole.data(), end}), 6);
}

}  // namespace
}  // namespace stoker::image::test
