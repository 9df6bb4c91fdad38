#include "stoker/image/jpeg_encode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/image/jpeg_transcode.h"
#include "stoker/testing/image_fixtures.h"
#include "stoker/testing/test_images.h"

namespace stoker::image::test {
namespace {

using testing::expect_error;
using testing::Fixture;
using testing::packed;
using testing::pattern_pixels;
using testing::span;

RgbView view_of(const std::vector<uint8_t>& rgb, int width, int height) {
  return {rgb.data(), width, height, 3 * static_cast<ptrdiff_t>(width)};
}

// Peak signal-to-noise ratio of the luma (BT.601) of RGB pixels `b` against `a` (same size), in
// dB: what 4:2:0 keeps at full resolution. (The pattern's noise differs per channel, and chroma
// subsampling drops that by design: PIL's save(quality=90) of it comes back at 27-30 dB in RGB,
// as ours does; DecodesAsPilsSaveAtTheSameQuality holds the encoder to PIL's pixels.)
double luma_psnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  const auto luma = [](const uint8_t* p) { return 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]; };
  double squares = 0;
  for (size_t i = 0; i + 2 < a.size(); i += 3) {
    const double d = luma(&a[i]) - luma(&b[i]);
    squares += d * d;
  }
  const double mse = squares / static_cast<double>(a.size() / 3);
  return mse == 0 ? INFINITY : 10 * std::log10(255.0 * 255.0 / mse);
}

TEST(JpegEncodeTest, DecodesCloseToTheInputWithARestartMarkerEveryMcuRow) {
  // Whole MCUs and partial ones (4:2:0: 16x16 pixels), and one pixel.
  const int sizes[][2] = {{64, 48}, {101, 37}, {16, 200}, {1, 1}};
  for (const auto& [width, height] : sizes) {
    SCOPED_TRACE(::testing::Message() << width << "x" << height);
    const std::vector<uint8_t> rgb = pattern_pixels(width, height, 3);
    Result<std::vector<uint8_t>> jpeg = encode_jpeg(view_of(rgb, width, height), 90);
    ASSERT_TRUE(jpeg.is_ok()) << jpeg.status().message();
    const ImageHeader header = read_image_header(span(jpeg.value())).value_or_throw();
    EXPECT_EQ(header.format, ImageFormat::kJpeg);
    EXPECT_EQ(header.width, width);
    EXPECT_EQ(header.height, height);
    EXPECT_EQ(header.color, ColorModel::kYCbCr);
    EXPECT_FALSE(header.progressive);
    const int per_row = (width + 15) / 16;  // MCUs of 16 px
    EXPECT_EQ(per_row % header.restart_interval, 0);
    // Baseline (SOF0), luma sampled 2x2 and chroma 1x1: the frame header's component entries
    // (after FF C0, length, precision, height, width and count) are id, HV sampling, table.
    const size_t sof = testing::find_jpeg_marker(jpeg.value(), 0xC0);
    ASSERT_NE(sof, SIZE_MAX);
    EXPECT_EQ(jpeg.value()[sof + 11], 0x22);
    EXPECT_EQ(jpeg.value()[sof + 14], 0x11);
    EXPECT_EQ(jpeg.value()[sof + 17], 0x11);

    DecodeBuffer buffer;
    const DecodedCrop decoded = decode_rgb(span(jpeg.value()), {}, buffer).value_or_throw();
    const std::vector<uint8_t> back = packed(decoded.pixels);
    ASSERT_EQ(back.size(), rgb.size());
    EXPECT_GT(luma_psnr(rgb, back), 35.0);
    // Nothing left for the import-time transcode to do: optimised tables, restart markers and
    // one baseline scan are what it makes.
    EXPECT_EQ(transcode_jpeg_for_crops(span(jpeg.value())).value_or_throw(), jpeg.value());
  }
}

TEST(JpegEncodeTest, DecodesAsPilsSaveAtTheSameQuality) {
  if (!testing::have_pil()) GTEST_SKIP() << STOKER_PYTHON " with PIL is not available";
  // PIL saved the same pixels as pil_rgb.png and, at quality 90 with its default 4:2:0, as
  // pil_420.jpg: the same libjpeg settings decode to the same pixels.
  const Fixture* png = nullptr;
  const Fixture* pil_jpeg = nullptr;
  for (const Fixture& f : testing::image_fixtures()) {
    if (f.name == "pil_rgb.png") png = &f;
    if (f.name == "pil_420.jpg") pil_jpeg = &f;
  }
  ASSERT_TRUE(png != nullptr && pil_jpeg != nullptr);
  DecodeBuffer buffer;
  const DecodedCrop original = decode_rgb(span(png->bytes), {}, buffer).value_or_throw();
  const std::vector<uint8_t> ours = encode_jpeg(original.pixels, 90).value_or_throw();
  const std::vector<uint8_t> decoded = packed(decode_rgb(span(ours), {}, buffer).value().pixels);
  EXPECT_EQ(decoded, pil_jpeg->pil_rgb) << testing::difference(decoded, pil_jpeg->pil_rgb);
}

TEST(JpegEncodeTest, RowsAreReadThroughTheStrideAndQualityTradesSizeForError) {
  const int width = 50, height = 40;
  const std::vector<uint8_t> rgb = pattern_pixels(width, height, 3);
  std::vector<uint8_t> padded(static_cast<size_t>(height) * (3 * width + 7), 0xAB);
  for (int y = 0; y < height; ++y)
    std::copy_n(rgb.begin() + 3 * width * y, 3 * width, padded.begin() + (3 * width + 7) * y);
  const std::vector<uint8_t> jpeg = encode_jpeg(view_of(rgb, width, height), 90).value_or_throw();
  EXPECT_EQ(encode_jpeg({padded.data(), width, height, 3 * width + 7}, 90).value_or_throw(), jpeg);

  const std::vector<uint8_t> low = encode_jpeg(view_of(rgb, width, height), 20).value_or_throw();
  EXPECT_LT(low.size(), jpeg.size());
  DecodeBuffer buffer;
  const double psnr_90 = luma_psnr(rgb, packed(decode_rgb(span(jpeg), {}, buffer).value().pixels));
  const double psnr_20 = luma_psnr(rgb, packed(decode_rgb(span(low), {}, buffer).value().pixels));
  EXPECT_LT(psnr_20, psnr_90);
}

TEST(JpegEncodeTest, BadArgumentsAreRefused) {
  const std::vector<uint8_t> rgb = pattern_pixels(8, 8, 3);
  const RgbView view = view_of(rgb, 8, 8);
  for (int quality : {0, 101, -5})
    expect_error(encode_jpeg(view, quality), StatusCode::kInvalidArgument, "not within 1..100");
  expect_error(encode_jpeg({}, 90), StatusCode::kInvalidArgument, "empty image (0x0)");
  expect_error(encode_jpeg({rgb.data(), 0, 8, 24}, 90), StatusCode::kInvalidArgument,
               "empty image (0x8)");
  expect_error(encode_jpeg({nullptr, 8, 8, 24}, 90), StatusCode::kInvalidArgument, "empty image");
  expect_error(encode_jpeg({rgb.data(), 8, 8, 23}, 90), StatusCode::kInvalidArgument,
               "stride 23 is below");
  const std::vector<uint8_t> wide(3 * size_t{kMaxJpegSide + 1});
  expect_error(encode_jpeg(view_of(wide, kMaxJpegSide + 1, 1), 90), StatusCode::kInvalidArgument,
               "65501x1 has a side over JPEG's 65500");
  EXPECT_TRUE(encode_jpeg(view_of(wide, kMaxJpegSide, 1), 90).is_ok());
}

}  // namespace
}  // namespace stoker::image::test
