#include "stoker/image/jpeg_transcode.h"

#include <gtest/gtest.h>

#include <algorithm>
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
using testing::expect_error;
using testing::Fixture;
using testing::image_fixtures;
using testing::JpegSpec;
using testing::packed;
using testing::span;

// The packed pixels of a decode, or empty with a test failure.
std::vector<uint8_t> decoded(const std::vector<uint8_t>& bytes, std::optional<CropRect> crop,
                             int min_width = 0, int min_height = 0) {
  static DecodeBuffer buffer;
  DecodeRequest request;
  request.crop = crop;
  request.min_width = min_width;
  request.min_height = min_height;
  Result<DecodedCrop> d = decode_rgb(span(bytes), request, buffer);
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.is_ok() ? packed(d.value().pixels) : std::vector<uint8_t>();
}

TEST(JpegTranscodeTest, BaselineWithRestartIntervalsTilingTheRowsAndTheSamePixels) {
  int transcoded = 0;
  for (const Fixture& f : image_fixtures()) {
    if (!f.is_jpeg()) continue;
    SCOPED_TRACE(f.name);
    Result<std::vector<uint8_t>> t = transcode_jpeg_for_crops(span(f.bytes));
    if (f.name == "enc_partial_scans.jpg") {  // block-smoothed: refused
      ASSERT_FALSE(t.is_ok());
      EXPECT_EQ(t.status().code(), StatusCode::kUnsupported);
      EXPECT_NE(t.status().message().find("block smoothing"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    const std::vector<uint8_t>& out = t.value();
    Result<ImageHeader> before = read_image_header(span(f.bytes));
    Result<ImageHeader> after = read_image_header(span(out));
    ASSERT_TRUE(before.is_ok() && after.is_ok());
    const ImageHeader& h = after.value();
    EXPECT_EQ(h.width, before.value().width);
    EXPECT_EQ(h.height, before.value().height);
    EXPECT_EQ(h.components, before.value().components);
    EXPECT_EQ(h.color, before.value().color);
    EXPECT_FALSE(h.progressive);
    // An MCU is 8 px per the largest horizontal sampling factor wide (SOF0: FF C0, length,
    // precision, height, width, count, then per component: id, sampling HV, table).
    const size_t sof = testing::find_jpeg_marker(out, 0xC0);
    ASSERT_NE(sof, SIZE_MAX);
    int max_h = 1;
    for (int c = 0; c < h.components; ++c) max_h = std::max(max_h, out[sof + 11 + 3 * c] >> 4);
    const int mcu_width = 8 * max_h;
    // Restart intervals that tile each MCU row, of 64 px or more (jpeg_restart_seek_test.cc
    // has the exact choice).
    const int per_row = (h.width + mcu_width - 1) / mcu_width;
    ASSERT_GT(h.restart_interval, 0);
    EXPECT_EQ(per_row % h.restart_interval, 0);
    EXPECT_TRUE(h.restart_interval == per_row || h.restart_interval * mcu_width >= 64);

    const std::vector<uint8_t> full = decoded(f.bytes, std::nullopt);
    EXPECT_TRUE(decoded(out, std::nullopt) == full) << difference(decoded(out, std::nullopt), full);
    for (const CropRect& c : crops_of(h.width, h.height, 25, 3)) {
      SCOPED_TRACE(::testing::Message()
                   << c.width << "x" << c.height << " at " << c.x << "," << c.y);
      const std::vector<uint8_t> expected = decoded(f.bytes, c);
      const std::vector<uint8_t> ours = decoded(out, c);
      ASSERT_TRUE(ours == expected) << difference(ours, expected, c.width);
      // At half scale too (where the crop is big enough to allow it).
      EXPECT_TRUE(decoded(out, c, c.width / 2, c.height / 2) ==
                  decoded(f.bytes, c, c.width / 2, c.height / 2));
    }
    // A transcoded file transcodes to itself.
    Result<std::vector<uint8_t>> again = transcode_jpeg_for_crops(span(out));
    ASSERT_TRUE(again.is_ok()) << again.status().message();
    EXPECT_TRUE(again.value() == out);
    ++transcoded;
  }
  EXPECT_GE(transcoded, 20);
}

TEST(JpegTranscodeTest, TheRestartSpanIsTheCallersAndNoneIsZero) {
  // 4:2:0, 256 px wide: 16 MCUs of 16 px a row.
  JpegSpec spec;
  spec.width = 256;
  spec.height = 40;
  const std::vector<uint8_t> jpeg = encode_jpeg(spec);
  const std::vector<uint8_t> full = decoded(jpeg, std::nullopt);
  const CropRect crop{37, 5, 101, 30};
  const std::vector<uint8_t> cropped = decoded(jpeg, crop);
  // span (px) -> interval (MCUs): none; the fewest dividing 16 that cover it; the whole row
  // where no divisor short of 16 does (13 to 15 MCUs do not divide 16).
  const std::pair<JDIMENSION, int> expected[] = {{0, 0},  {1, 1},    {32, 2},    {33, 4},
                                                 {64, 4}, {200, 16}, {10000, 16}};
  for (const auto& [restart_span, interval] : expected) {
    SCOPED_TRACE(restart_span);
    Result<std::vector<uint8_t>> t =
        transcode_jpeg_for_crops(span(jpeg), kDefaultMaxPixels, restart_span);
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    Result<ImageHeader> h = read_image_header(span(t.value()));
    ASSERT_TRUE(h.is_ok());
    EXPECT_EQ(h.value().restart_interval, interval);
    EXPECT_EQ(testing::find_jpeg_marker(t.value(), 0xDD) != SIZE_MAX, interval > 0);  // DRI
    EXPECT_TRUE(decoded(t.value(), std::nullopt) == full);
    EXPECT_TRUE(decoded(t.value(), crop) == cropped);
  }
}

TEST(JpegTranscodeTest, DropsExifAndIccButKeepsTheAdobeColourTransform) {
  for (const Fixture& f : image_fixtures()) {
    if (f.name != "pil_exif_icc.jpg" && f.name != "enc_ycck.jpg") continue;
    SCOPED_TRACE(f.name);
    Result<std::vector<uint8_t>> t = transcode_jpeg_for_crops(span(f.bytes));
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    const std::vector<uint8_t>& out = t.value();
    EXPECT_EQ(testing::find_jpeg_marker(out, 0xE1), SIZE_MAX);  // APP1: EXIF
    EXPECT_EQ(testing::find_jpeg_marker(out, 0xE2), SIZE_MAX);  // APP2: ICC
    Result<ImageHeader> h = read_image_header(span(out));
    ASSERT_TRUE(h.is_ok());
    if (f.name == "enc_ycck.jpg") {
      EXPECT_NE(testing::find_jpeg_marker(out, 0xEE), SIZE_MAX);  // APP14: Adobe
      EXPECT_EQ(h.value().color, ColorModel::kYcck);
    }
  }
}

TEST(JpegTranscodeTest, BadInputIsAnErrorOnOneLine) {
  auto transcode = [](const std::vector<uint8_t>& bytes) {
    return transcode_jpeg_for_crops(span(bytes));
  };
  expect_error(transcode({}), StatusCode::kCorrupt, "empty");
  expect_error(transcode(testing::encode_png({})), StatusCode::kInvalidArgument, "not a JPEG");
  const std::vector<uint8_t> jpeg = encode_jpeg(JpegSpec());
  for (size_t cut : {jpeg.size() / 2, jpeg.size() - 2}) {
    expect_error(transcode({jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(cut)}),
                 StatusCode::kCorrupt, "JPEG: truncated");
  }
  std::vector<uint8_t> twelve = jpeg;
  const size_t sof = testing::find_jpeg_marker(jpeg, 0xC0);
  twelve[sof + 1] = 0xC1;
  twelve[sof + 4] = 12;
  expect_error(transcode(twelve), StatusCode::kUnsupported, "precision 12");
  std::vector<uint8_t> huge = jpeg;
  testing::put_u16_be(huge, sof + 5, 65535);
  testing::put_u16_be(huge, sof + 7, 65535);
  expect_error(transcode(huge), StatusCode::kUnsupported, "over the cap");
  // Coefficients libjpeg reads but cannot turn into pixels (fractional sampling): refused, as
  // decode_rgb would refuse the result.
  std::vector<uint8_t> fractional = encode_jpeg(JpegSpec());
  const size_t fractional_sof = testing::find_jpeg_marker(fractional, 0xC0);
  fractional[fractional_sof + 11] = 0x31;
  fractional[fractional_sof + 14] = 0x21;
  expect_error(transcode(fractional), StatusCode::kUnsupported, "Fractional sampling");
  std::vector<uint8_t> bad_table = jpeg;
  bad_table[testing::find_jpeg_marker(jpeg, 0xC4) + 5 + 15] = 250;
  expect_error(transcode(bad_table), StatusCode::kCorrupt, "Huffman");
}

}  // namespace
}  // namespace stoker::image::test
