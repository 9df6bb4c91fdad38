#include "stoker/image/png_transcode.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/testing/image_fixtures.h"
#include "stoker/testing/test_images.h"

namespace stoker::image::test {
namespace {

using testing::crops_of;
using testing::difference;
using testing::encode_jpeg;
using testing::encode_png;
using testing::expect_error;
using testing::Fixture;
using testing::have_pil;
using testing::image_fixtures;
using testing::packed;
using testing::PngSpec;
using testing::span;

std::vector<uint8_t> decoded(const std::vector<uint8_t>& bytes, std::optional<CropRect> crop) {
  static DecodeBuffer buffer;
  DecodeRequest request;
  request.crop = crop;
  Result<DecodedCrop> d = decode_rgb(span(bytes), request, buffer);
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.is_ok() ? packed(d.value().pixels) : std::vector<uint8_t>();
}

uint32_t u32_be(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}

// The filter type of each row of a non-interlaced 8-bit RGB PNG (its IDAT chunks inflated).
std::vector<int> row_filters(const std::vector<uint8_t>& png, int width, int height) {
  std::vector<uint8_t> deflated;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = u32_be(png, at);
    if (std::string(png.begin() + at + 4, png.begin() + at + 8) == "IDAT")
      deflated.insert(deflated.end(), png.begin() + at + 8, png.begin() + at + 8 + length);
    at += 12 + length;
  }
  const size_t row = 1 + size_t(width) * 3;
  std::vector<uint8_t> raw(row * height);
  uLongf size = raw.size();
  EXPECT_EQ(uncompress(raw.data(), &size, deflated.data(), deflated.size()), Z_OK);
  EXPECT_EQ(size, raw.size());
  std::vector<int> filters;
  for (int y = 0; y < height; ++y) filters.push_back(raw[y * row]);
  return filters;
}

TEST(PngTranscodeTest, RgbAndRgbaBecomePlainRgbPngsWithTheSamePixelsAndNoPaethRows) {
  int transcoded = 0;
  for (const Fixture& f : image_fixtures()) {
    if (f.is_jpeg()) continue;
    SCOPED_TRACE(f.name);
    const Result<ImageHeader> source = read_image_header(span(f.bytes));
    if (!source.is_ok()) continue;  // the corrupt fixtures
    Result<std::vector<uint8_t>> t = transcode_png_for_crops(span(f.bytes));
    if (source.value().bit_depth != 8 || source.value().components < 3) {
      expect_error(t, StatusCode::kUnsupported, "only 8-bit RGB and RGBA");
      continue;
    }
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    const std::vector<uint8_t>& png = t.value();
    const ImageHeader h = read_image_header(span(png)).value_or_throw();
    EXPECT_EQ(h.format, ImageFormat::kPng);
    EXPECT_EQ(h.components, 3);
    EXPECT_EQ(h.bit_depth, 8);
    EXPECT_FALSE(h.progressive);
    EXPECT_LE(png.size(), kMaxPngTranscodeGrowth * f.bytes.size());
    for (int filter : row_filters(png, h.width, h.height)) {
      EXPECT_LE(filter, 3);  // not Paeth (4)
    }
    const std::vector<uint8_t> whole = decoded(png, std::nullopt);
    EXPECT_TRUE(whole == decoded(f.bytes, std::nullopt)) << difference(whole, decoded(f.bytes, {}));
    if (have_pil()) {
      EXPECT_TRUE(whole == f.pil_rgb) << difference(whole, f.pil_rgb);
    }
    for (const CropRect& c : crops_of(h.width, h.height, 10, 23)) {
      EXPECT_TRUE(decoded(png, c) == decoded(f.bytes, c)) << c.x << "," << c.y;
    }
    // A transcode transcodes to itself.
    Result<std::vector<uint8_t>> again = transcode_png_for_crops(span(png));
    ASSERT_TRUE(again.is_ok()) << again.status().message();
    EXPECT_TRUE(again.value() == png);
    ++transcoded;
  }
  EXPECT_GE(transcoded, 3);  // RGB, RGBA, interlaced
}

TEST(PngTranscodeTest, BadInputIsAnErrorNamingIt) {
  expect_error(transcode_png_for_crops(span(encode_jpeg({}))), StatusCode::kInvalidArgument,
               "not a PNG");
  PngSpec spec;
  spec.width = 64;
  spec.height = 128;
  const std::vector<uint8_t> png = encode_png(spec);
  const std::vector<uint8_t> cut(png.begin(), png.begin() + png.size() * 3 / 4);
  expect_error(transcode_png_for_crops(span(cut)), StatusCode::kCorrupt, "PNG: ");
  expect_error(transcode_png_for_crops(span(png), 64 * 127), StatusCode::kUnsupported, "PNG");
}

}  // namespace
}  // namespace stoker::image::test
