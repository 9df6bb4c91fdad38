#include "stoker/image/image_header.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "stoker/testing/image_fixtures.h"
#include "stoker/testing/test_images.h"

namespace stoker::image::test {
namespace {

using testing::encode_jpeg;
using testing::encode_png;
using testing::expect_error;
using testing::JpegSpec;
using testing::PngSpec;
using testing::span;

// The fixtures' encoder says why libjpeg refused (here an empty image) rather than giving no
// bytes, which a fixture would only trip over later.
TEST(ImageHeaderTest, TheFixturesJpegEncoderNamesLibjpegsRefusal) {
  try {
    encode_jpeg(JpegSpec{0, 8});
    FAIL() << "an empty image encoded";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("encode_jpeg: libjpeg: ", 0), 0u) << error.what();
    EXPECT_GT(std::string(error.what()).size(), std::string("encode_jpeg: libjpeg: ").size());
  }
}

TEST(ImageHeaderTest, ReadsJpegSizeComponentsAndColour) {
  struct Case {
    JpegSpec spec;
    ColorModel color;
  };
  const Case cases[] = {
      {{37, 21}, ColorModel::kYCbCr},
      {{5, 70, 1}, ColorModel::kGray},
      {{16, 16, 4}, ColorModel::kCmyk},
      {{1, 1}, ColorModel::kYCbCr},
  };
  for (const Case& c : cases) {
    const std::vector<uint8_t> jpeg = encode_jpeg(c.spec);
    ASSERT_FALSE(jpeg.empty());
    Result<ImageHeader> header = read_image_header(span(jpeg));
    ASSERT_TRUE(header.is_ok()) << header.status().message();
    EXPECT_EQ(header.value().format, ImageFormat::kJpeg);
    EXPECT_EQ(header.value().width, c.spec.width);
    EXPECT_EQ(header.value().height, c.spec.height);
    EXPECT_EQ(header.value().components, c.spec.components);
    EXPECT_EQ(header.value().bit_depth, 8);
    EXPECT_EQ(header.value().color, c.color);
    EXPECT_FALSE(header.value().progressive);
    EXPECT_EQ(header.value().restart_interval, 0);
  }
}

TEST(ImageHeaderTest, ReadsJpegCodingProgressiveAndRestartInterval) {
  JpegSpec spec;
  spec.progressive = true;
  Result<ImageHeader> progressive = read_image_header(span(encode_jpeg(spec)));
  ASSERT_TRUE(progressive.is_ok()) << progressive.status().message();
  EXPECT_TRUE(progressive.value().progressive);

  // 64 px wide in 16-px MCUs (4:2:0): four MCUs per row, one restart interval per MCU row.
  spec = JpegSpec();
  spec.restart_rows = 1;
  Result<ImageHeader> restarts = read_image_header(span(encode_jpeg(spec)));
  ASSERT_TRUE(restarts.is_ok()) << restarts.status().message();
  EXPECT_EQ(restarts.value().restart_interval, 4);

  spec = JpegSpec();
  spec.arithmetic = true;
  Result<ImageHeader> arithmetic = read_image_header(span(encode_jpeg(spec)));
  ASSERT_TRUE(arithmetic.is_ok()) << arithmetic.status().message();
  EXPECT_EQ(arithmetic.value().width, 64);
}

TEST(ImageHeaderTest, ReadsPngColourTypesDepthsAndInterlacing) {
  struct Case {
    PngSpec spec;
    ColorModel color;
    int components;
  };
  const Case cases[] = {
      {{40, 30, 0}, ColorModel::kGray, 1},
      {{40, 30, 0, 1}, ColorModel::kGray, 1},
      {{40, 30, 0, 16}, ColorModel::kGray, 1},
      {{40, 30, 2}, ColorModel::kRgb, 3},
      {{40, 30, 2, 16}, ColorModel::kRgb, 3},
      {{40, 30, 3, 4}, ColorModel::kPalette, 1},
      {{40, 30, 4}, ColorModel::kGrayAlpha, 2},
      {{40, 30, 6, 8, true}, ColorModel::kRgba, 4},
      {{1, 1}, ColorModel::kRgb, 3},
  };
  for (const Case& c : cases) {
    const std::vector<uint8_t> png = encode_png(c.spec);
    ASSERT_FALSE(png.empty());
    Result<ImageHeader> header = read_image_header(span(png));
    ASSERT_TRUE(header.is_ok()) << header.status().message();
    EXPECT_EQ(header.value().format, ImageFormat::kPng);
    EXPECT_EQ(header.value().width, c.spec.width);
    EXPECT_EQ(header.value().height, c.spec.height);
    EXPECT_EQ(header.value().color, c.color);
    EXPECT_EQ(header.value().components, c.components);
    EXPECT_EQ(header.value().bit_depth, c.spec.bit_depth);
    EXPECT_EQ(header.value().progressive, c.spec.interlaced);
  }
}

TEST(ImageHeaderTest, SniffsTheFormatFromTheBytesAndSaysWhatOthersLookLike) {
  expect_error(read_image_header({}), StatusCode::kCorrupt, "empty");
  const std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0};
  expect_error(read_image_header(span(gif)), StatusCode::kCorrupt,
               "starts with 47 49 46 38 39 61 01 00 (a GIF)");
  std::vector<uint8_t> random(300);
  uint32_t x = 7;
  for (uint8_t& b : random) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  random[0] = 0x42;
  expect_error(read_image_header(span(random)), StatusCode::kCorrupt, "not a JPEG or PNG");
  // A PNG under a JPEG's magic is a JPEG to the sniffer, and a broken one.
  std::vector<uint8_t> png = encode_png({});
  png[0] = 0xFF, png[1] = 0xD8, png[2] = 0xFF;
  expect_error(read_image_header(span(png)), StatusCode::kCorrupt, "JPEG: ");
}

TEST(ImageHeaderTest, TruncatedHeadersAreCorrupt) {
  const std::vector<uint8_t> jpeg = encode_jpeg({});
  const size_t sos = testing::find_jpeg_marker(jpeg, 0xDA);
  ASSERT_NE(sos, SIZE_MAX);
  for (size_t cut : {size_t{3}, size_t{4}, size_t{20}, sos - 1, sos + 3}) {
    SCOPED_TRACE(cut);
    const std::vector<uint8_t> head(jpeg.begin(), jpeg.begin() + cut);
    expect_error(read_image_header(span(head)), StatusCode::kCorrupt, "JPEG: truncated");
  }
  const std::vector<uint8_t> png = encode_png({});
  for (size_t cut : {size_t{8}, size_t{12}, size_t{20}, size_t{32}, size_t{40}}) {
    SCOPED_TRACE(cut);
    const std::vector<uint8_t> head(png.begin(), png.begin() + cut);
    expect_error(read_image_header(span(head)), StatusCode::kCorrupt, "PNG: truncated");
  }
}

TEST(ImageHeaderTest, RefusesMorePixelsThanTheCapFromTheHeaderAlone) {
  std::vector<uint8_t> jpeg = encode_jpeg({});
  const size_t sof = testing::find_jpeg_marker(jpeg, 0xC0);
  ASSERT_NE(sof, SIZE_MAX);
  // SOF: FF C0, length (2), precision (1), height (2), width (2).
  testing::put_u16_be(jpeg, sof + 5, 65535);
  testing::put_u16_be(jpeg, sof + 7, 65535);
  expect_error(read_image_header(span(jpeg)), StatusCode::kUnsupported,
               "JPEG: 65535x65535 is 4294836225 pixels, over the cap of 178956970");

  std::vector<uint8_t> png = encode_png({});
  // IHDR chunk at 8: length (4), type (4), width (4), height (4).
  testing::put_u32_be(png, 16, 65535);
  testing::put_u32_be(png, 20, 65535);
  testing::fix_png_crc(png, 8);
  expect_error(read_image_header(span(png)), StatusCode::kUnsupported,
               "PNG: 65535x65535 is 4294836225 pixels, over the cap of 178956970");

  // The cap is the caller's: 64x48 passes at 3072 pixels, not at 3071.
  const std::vector<uint8_t> small = encode_jpeg({});
  EXPECT_TRUE(read_image_header(span(small), 64 * 48).is_ok());
  expect_error(read_image_header(span(small), 64 * 48 - 1), StatusCode::kUnsupported, "cap");
  const std::vector<uint8_t> small_png = encode_png({});
  EXPECT_TRUE(read_image_header(span(small_png), 40 * 30).is_ok());
  expect_error(read_image_header(span(small_png), 40 * 30 - 1), StatusCode::kUnsupported, "cap");
}

TEST(ImageHeaderTest, ZeroSizesAreCorrupt) {
  std::vector<uint8_t> jpeg = encode_jpeg({});
  const size_t sof = testing::find_jpeg_marker(jpeg, 0xC0);
  testing::put_u16_be(jpeg, sof + 7, 0);
  expect_error(read_image_header(span(jpeg)), StatusCode::kCorrupt, "JPEG: ");

  std::vector<uint8_t> png = encode_png({});
  testing::put_u32_be(png, 20, 0);
  testing::fix_png_crc(png, 8);
  expect_error(read_image_header(span(png)), StatusCode::kCorrupt, "PNG: ");
}

TEST(ImageHeaderTest, JpegCodingsLibjpegCannotDecodeAreUnsupported) {
  const std::vector<uint8_t> jpeg = encode_jpeg({});
  const size_t sof = testing::find_jpeg_marker(jpeg, 0xC0);
  // 12-bit samples, in a baseline frame (not allowed) and in an extended one (SOF1).
  for (uint8_t marker : {uint8_t{0xC0}, uint8_t{0xC1}}) {
    std::vector<uint8_t> twelve = jpeg;
    twelve[sof + 1] = marker;
    twelve[sof + 4] = 12;
    expect_error(read_image_header(span(twelve)), StatusCode::kUnsupported, "precision 12");
  }
  std::vector<uint8_t> lossless = jpeg;
  lossless[sof + 1] = 0xC3;
  expect_error(read_image_header(span(lossless)), StatusCode::kUnsupported, "SOF type 0xc3");
}

TEST(ImageHeaderTest, JpegSamplingLibjpegCannotUpsampleIsUnsupported) {
  // 4:4:4 with the luma sampling factors patched to 3x1 (SOF0: ..., count, then per component
  // id, HV, table): chroma at 1/3 horizontally upsamples by 3, which libjpeg does; Cb at 2x1
  // makes 3/2, which it does not ("Fractional sampling").
  JpegSpec spec;
  spec.h_sampling = spec.v_sampling = 1;
  std::vector<uint8_t> jpeg = encode_jpeg(spec);
  const size_t sof = testing::find_jpeg_marker(jpeg, 0xC0);
  ASSERT_NE(sof, SIZE_MAX);
  jpeg[sof + 11] = 0x31;
  jpeg[sof + 14] = 0x21;
  expect_error(read_image_header(span(jpeg)), StatusCode::kUnsupported, "Fractional sampling");
}

TEST(ImageHeaderTest, PngCrcErrorsAreCorrupt) {
  std::vector<uint8_t> png = encode_png({});
  png[29] ^= 0x01;  // IHDR's CRC
  expect_error(read_image_header(span(png)), StatusCode::kCorrupt, "PNG: ");
}

}  // namespace
}  // namespace stoker::image::test
