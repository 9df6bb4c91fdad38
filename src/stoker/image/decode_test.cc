#include "stoker/image/decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "stoker/image/jpeg_transcode.h"
#include "stoker/image/resample.h"
#include "stoker/testing/image_fixtures.h"
#include "stoker/testing/test_images.h"

namespace stoker::image::test {
namespace {

using testing::crops_of;
using testing::difference;
using testing::encode_jpeg;
using testing::encode_png;
using testing::Fixture;
using testing::have_pil;
using testing::image_fixtures;
using testing::packed;
using testing::rectangle;
using testing::span;

Result<DecodedCrop> decode(const std::vector<uint8_t>& bytes, DecodeBuffer& buffer,
                           std::optional<CropRect> crop = std::nullopt, int min_width = 0,
                           int min_height = 0) {
  DecodeRequest request;
  request.crop = crop;
  request.min_width = min_width;
  request.min_height = min_height;
  return decode_rgb(span(bytes), request, buffer);
}

// PIL's pixels byte for byte; for the block-smoothed progressive JPEG, within one grey level
// where PIL's libjpeg-turbo is of another release line than ours (pil_libjpeg_turbo_is_ours).
void expect_pil_pixels(const Fixture& f, const std::vector<uint8_t>& ours,
                       const std::vector<uint8_t>& pil) {
  if (f.name == "enc_partial_scans.jpg" && !testing::pil_libjpeg_turbo_is_ours()) {
    ASSERT_EQ(ours.size(), pil.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      ASSERT_LE(std::abs(int{ours[i]} - int{pil[i]}), 1)
          << difference(ours, pil) << " (PIL's libjpeg-turbo " << testing::pil_libjpeg_turbo()
          << ")";
    }
    return;
  }
  EXPECT_TRUE(ours == pil) << difference(ours, pil);
}

TEST(DecodeTest, FullDecodeEqualsPilConvertRgb) {
  if (!have_pil()) GTEST_SKIP() << STOKER_PYTHON " with PIL is not available";
  DecodeBuffer buffer;
  int compared = 0;
  for (const Fixture& f : image_fixtures()) {
    SCOPED_TRACE(f.name);
    Result<DecodedCrop> decoded = decode(f.bytes, buffer);
    ASSERT_TRUE(decoded.is_ok()) << decoded.status().message();
    const DecodedCrop& d = decoded.value();
    EXPECT_EQ(d.scale_num, 8);
    EXPECT_EQ(d.box.x0, 0);
    EXPECT_EQ(d.box.x1, d.pixels.width);
    EXPECT_EQ(d.box.y1, d.pixels.height);
    const std::vector<uint8_t> ours = packed(d.pixels);
    ASSERT_FALSE(f.pil_rgb.empty()) << "PIL could not read it";
    expect_pil_pixels(f, ours, f.pil_rgb);
    ++compared;
  }
  EXPECT_GE(compared, 40);
}

TEST(DecodeTest, CropDecodeEqualsTheSameRectangleOfTheFullDecode) {
  DecodeBuffer full_buffer;
  DecodeBuffer crop_buffer;
  for (const Fixture& f : image_fixtures()) {
    SCOPED_TRACE(f.name);
    Result<DecodedCrop> full = decode(f.bytes, full_buffer);
    ASSERT_TRUE(full.is_ok()) << full.status().message();
    const RgbView image = full.value().pixels;
    const std::vector<uint8_t> whole = packed(image);
    for (const CropRect& c : crops_of(image.width, image.height, 60, 7)) {
      SCOPED_TRACE(::testing::Message()
                   << c.width << "x" << c.height << " at " << c.x << "," << c.y);
      Result<DecodedCrop> crop = decode(f.bytes, crop_buffer, c);
      ASSERT_TRUE(crop.is_ok()) << crop.status().message();
      const DecodedCrop& d = crop.value();
      ASSERT_EQ(d.pixels.width, c.width);
      ASSERT_EQ(d.pixels.height, c.height);
      EXPECT_EQ(d.scale_num, 8);
      EXPECT_EQ(d.box.x0, 0);
      EXPECT_EQ(d.box.y0, 0);
      EXPECT_EQ(d.box.x1, c.width);
      EXPECT_EQ(d.box.y1, c.height);
      const std::vector<uint8_t> expected = rectangle(whole, image.width, c);
      const std::vector<uint8_t> ours = packed(d.pixels);
      ASSERT_TRUE(ours == expected) << difference(ours, expected, d.pixels.width);
    }
  }
}

TEST(DecodeTest, HalfScaleDecodeEqualsPilDraft) {
  if (!have_pil()) GTEST_SKIP() << STOKER_PYTHON " with PIL is not available";
  DecodeBuffer buffer;
  for (const Fixture& f : image_fixtures()) {
    if (!f.is_jpeg()) continue;
    SCOPED_TRACE(f.name);
    Result<ImageHeader> header = read_image_header(span(f.bytes));
    ASSERT_TRUE(header.is_ok());
    const int w = header.value().width, h = header.value().height;
    // 1/2 covers (w/2, h/2); 1/4 does not (for sides of 2 or more).
    Result<DecodedCrop> half = decode(f.bytes, buffer, std::nullopt, w / 2, h / 2);
    ASSERT_TRUE(half.is_ok()) << half.status().message();
    const DecodedCrop& d = half.value();
    if (w < 2 || h < 2) continue;
    EXPECT_EQ(d.scale_num, 4);
    EXPECT_EQ(d.pixels.width, (w + 1) / 2);
    EXPECT_EQ(d.pixels.height, (h + 1) / 2);
    EXPECT_EQ(d.box.x1, w / 2.0);
    EXPECT_EQ(d.box.y1, h / 2.0);
    const std::vector<uint8_t> ours = packed(d.pixels);
    expect_pil_pixels(f, ours, f.pil_half_rgb);
  }
}

TEST(DecodeTest, ScaledCropDecodeEqualsTheScaledFullDecodeAndSaysWhereTheCropIs) {
  DecodeBuffer full_buffer;
  DecodeBuffer crop_buffer;
  for (const Fixture& f : image_fixtures()) {
    if (!f.is_jpeg() || f.name.find("1x1") != std::string::npos) continue;
    SCOPED_TRACE(f.name);
    for (int scale : {2, 4}) {
      SCOPED_TRACE(scale);
      Result<ImageHeader> header = read_image_header(span(f.bytes));
      ASSERT_TRUE(header.is_ok());
      const int w = header.value().width, h = header.value().height;
      Result<DecodedCrop> full =
          decode(f.bytes, full_buffer, std::nullopt, w * scale / 8, h * scale / 8);
      ASSERT_TRUE(full.is_ok()) << full.status().message();
      ASSERT_EQ(full.value().scale_num, scale);
      const RgbView image = full.value().pixels;
      const std::vector<uint8_t> whole = packed(image);
      for (const CropRect& c : crops_of(w, h, 40, 11)) {
        // The smallest minimum size that the crop at this scale still covers.
        const int min_w = c.width * scale / 8, min_h = c.height * scale / 8;
        Result<DecodedCrop> crop = decode(f.bytes, crop_buffer, c, min_w, min_h);
        ASSERT_TRUE(crop.is_ok()) << crop.status().message();
        const DecodedCrop& d = crop.value();
        if (min_w == 0 && min_h == 0) {
          EXPECT_EQ(d.scale_num, 8);
          continue;
        }
        ASSERT_EQ(d.scale_num, scale);
        const double f8 = scale / 8.0;
        const CropRect touched{int(std::floor(c.x * f8)), int(std::floor(c.y * f8)),
                               int(std::ceil((c.x + c.width) * f8)) - int(std::floor(c.x * f8)),
                               int(std::ceil((c.y + c.height) * f8)) - int(std::floor(c.y * f8))};
        const CropRect clamped{touched.x, touched.y,
                               std::min(touched.width, image.width - touched.x),
                               std::min(touched.height, image.height - touched.y)};
        ASSERT_EQ(d.pixels.width, clamped.width);
        ASSERT_EQ(d.pixels.height, clamped.height);
        EXPECT_DOUBLE_EQ(d.box.x0, c.x * f8 - touched.x);
        EXPECT_DOUBLE_EQ(d.box.y0, c.y * f8 - touched.y);
        EXPECT_DOUBLE_EQ(d.box.x1 - d.box.x0, c.width * f8);
        EXPECT_DOUBLE_EQ(d.box.y1 - d.box.y0, c.height * f8);
        const std::vector<uint8_t> expected = rectangle(whole, image.width, clamped);
        const std::vector<uint8_t> ours = packed(d.pixels);
        ASSERT_TRUE(ours == expected) << difference(ours, expected, d.pixels.width);
      }
    }
  }
}

// libjpeg-turbo upsamples a chroma component "fancy" (triangle filter) only in an image more
// than 2 of its samples wide, and its jpeg_crop_scanline switches to the plain (box) upsampler
// when the decoded columns leave a component under 2 samples. At 4:2:0, whose fancy filter
// blends rows too, a 1-column crop at the left edge, or just past an iMCU's start at the right
// edge, differed from the full decode, and so did a restart window holding only an image's
// last interval, 2 px wide. At 8/8 every crop 1-3 columns wide equals the same rectangle of the
// full decode, at 4:2:0, 4:2:2 and 4:1:1, also with a restart marker missing (as in the
// fuzzer's fuzz/findings/image-crop-differs-from-whole-restart.jpg, whose missing marker was no
// part of the cause). 98 px: 2 px beyond the last whole MCU at 4:2:x (16 px) and 4:1:1 (32 px).
TEST(DecodeTest, NarrowCropsAndWindowsUpsampleAsTheFullDecode) {
  DecodeBuffer full_buffer;
  DecodeBuffer crop_buffer;
  for (const auto& [h, v] : {std::pair{2, 2}, std::pair{2, 1}, std::pair{4, 1}}) {
    testing::JpegSpec spec;
    spec.width = 98;
    spec.height = 20;
    spec.h_sampling = h;
    spec.v_sampling = v;
    const std::vector<uint8_t> plain = encode_jpeg(spec);
    spec.restart_mcus = 1;
    const std::vector<uint8_t> restarts = encode_jpeg(spec);
    std::vector<uint8_t> missing = restarts;  // its first restart marker cut out
    const uint8_t rst0[] = {0xFF, 0xD0};
    const auto rst = std::search(missing.begin() + testing::find_jpeg_marker(missing, 0xDA),
                                 missing.end(), std::begin(rst0), std::end(rst0));
    ASSERT_NE(rst, missing.end());
    missing.erase(rst, rst + 2);
    const std::pair<const char*, const std::vector<uint8_t>*> variants[] = {
        {"no restart markers", &plain},
        {"a restart marker every MCU", &restarts},
        {"its first restart marker missing", &missing}};
    for (const auto& [name, bytes] : variants) {
      SCOPED_TRACE(::testing::Message() << h << "x" << v << " sampling, " << name);
      Result<DecodedCrop> full = decode(*bytes, full_buffer);
      ASSERT_TRUE(full.is_ok()) << full.status().message();
      const std::vector<uint8_t> whole = packed(full.value().pixels);
      for (int width = 1; width <= 3; ++width) {
        for (int x = 0; x + width <= spec.width; ++x) {
          const CropRect c{x, 1, width, spec.height - 3};
          SCOPED_TRACE(::testing::Message() << c.width << "x" << c.height << " at " << c.x);
          Result<DecodedCrop> crop = decode(*bytes, crop_buffer, c);
          ASSERT_TRUE(crop.is_ok()) << crop.status().message();
          const std::vector<uint8_t> expected = rectangle(whole, spec.width, c);
          const std::vector<uint8_t> ours = packed(crop.value().pixels);
          ASSERT_TRUE(ours == expected) << difference(ours, expected, c.width);
        }
      }
    }
  }
}

// The loader's path — a crop's rows streamed into the resize, never the whole crop — writes the
// bytes of the resize of the decoded crop: every fixture (and the import's transcode of each
// JPEG, whose restart windows decode only the crop's intervals), random crops (whole image,
// corners, edges, random), output sizes from 1 to upscales, both flips, uint8 and float32, full
// and reduced DCT scale, both kernels.
TEST(DecodeTest, StreamedResampleEqualsTheResampleOfTheDecodedCrop) {
  DecodeBuffer buffer;
  Resampler kernels[] = {Resampler(ResampleKernel::kSimd), Resampler(ResampleKernel::kScalar)};
  std::mt19937 rng(23);
  int compared = 0;
  for (const Fixture& f : image_fixtures()) {
    std::vector<std::vector<uint8_t>> variants = {f.bytes};
    if (f.is_jpeg()) {
      Result<std::vector<uint8_t>> t = transcode_jpeg_for_crops(span(f.bytes));
      if (t.is_ok()) variants.push_back(std::move(t.value()));
    }
    for (const std::vector<uint8_t>& bytes : variants) {
      SCOPED_TRACE(f.name + (&bytes == &variants.front() ? "" : " (transcoded)"));
      Result<DecodedCrop> whole = decode(bytes, buffer);
      if (!whole.is_ok()) continue;  // the corrupt fixtures
      const int width = whole.value().pixels.width, height = whole.value().pixels.height;
      for (const CropRect& crop : crops_of(width, height, 12, compared)) {
        ResampleOutput out;
        out.width = std::uniform_int_distribution<int>(1, 120)(rng);
        out.height = std::uniform_int_distribution<int>(1, 120)(rng);
        out.flip_horizontal = rng() & 1;
        out.type = rng() & 1 ? ResampleOutput::Type::kUint8 : ResampleOutput::Type::kFloat32;
        out.mean = {0.485f, 0.456f, 0.406f};
        out.std = {0.229f, 0.224f, 0.225f};
        const bool scaled = rng() & 1;
        Resampler& resampler = kernels[compared % 5 == 0];
        SCOPED_TRACE(::testing::Message()
                     << "crop " << crop.width << "x" << crop.height << " at " << crop.x << ","
                     << crop.y << " to " << out.width << "x" << out.height << " flip "
                     << out.flip_horizontal << " scaled " << scaled << " "
                     << resampler.kernel_name());
        DecodeRequest request;
        request.crop = crop;
        if (scaled) request.min_width = out.width, request.min_height = out.height;
        const size_t bytes_out = size_t{3} * out.width * out.height * 4;
        std::vector<uint8_t> materialised(bytes_out, 0), streamed(bytes_out, 0);
        Result<DecodedCrop> d = decode_rgb(span(bytes), request, buffer);
        ASSERT_TRUE(d.is_ok()) << d.status().message();
        ASSERT_TRUE(
            resampler.resample(d.value().pixels, d.value().box, out, materialised.data()).is_ok());
        Result<DecodedRows*> rows = decode_rgb_rows(span(bytes), request, buffer);
        ASSERT_TRUE(rows.is_ok()) << rows.status().message();
        EXPECT_EQ(rows.value()->box.x1, d.value().box.x1);
        EXPECT_EQ(rows.value()->box.y0, d.value().box.y0);
        const Status s = resampler.resample(*rows.value(), rows.value()->box, out, streamed.data());
        ASSERT_TRUE(s.is_ok()) << s.message();
        ASSERT_TRUE(streamed == materialised) << difference(streamed, materialised);
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 12 * 60);
}

TEST(DecodeScaleTest, TheSmallestAcceleratedScaleThatCoversTheMinimumSize) {
  const std::vector<uint8_t> jpeg = encode_jpeg({400, 300});
  DecodeBuffer buffer;
  struct Case {
    int min_width, min_height, scale;
  };
  const CropRect crop{40, 20, 200, 160};
  for (const Case& c : {Case{0, 0, 8}, Case{50, 40, 2}, Case{51, 40, 4}, Case{50, 41, 4},
                        Case{100, 80, 4}, Case{101, 80, 8}, Case{200, 160, 8}, Case{300, 1, 8}}) {
    SCOPED_TRACE(::testing::Message() << c.min_width << "x" << c.min_height);
    Result<DecodedCrop> d = decode(jpeg, buffer, crop, c.min_width, c.min_height);
    ASSERT_TRUE(d.is_ok()) << d.status().message();
    EXPECT_EQ(d.value().scale_num, c.scale);
    // A reduced scale's box covers at least the minimum size.
    if (c.scale == 8) continue;
    EXPECT_GE(d.value().box.x1 - d.value().box.x0, c.min_width);
    EXPECT_GE(d.value().box.y1 - d.value().box.y0, c.min_height);
  }
  // PNG has no reduced scale.
  Result<DecodedCrop> png = decode(encode_png({400, 300}), buffer, crop, 50, 40);
  ASSERT_TRUE(png.is_ok()) << png.status().message();
  EXPECT_EQ(png.value().scale_num, 8);
}

TEST(DecodeBufferTest, DecodingTheSameSizeAgainAllocatesNothing) {
  const std::vector<uint8_t> jpeg = encode_jpeg({300, 200, 4});
  const std::vector<uint8_t> png = encode_png({});
  DecodeBuffer buffer;
  ASSERT_TRUE(decode(jpeg, buffer).is_ok());
  ASSERT_TRUE(decode(png, buffer).is_ok());
  const size_t capacity = buffer.capacity();
  EXPECT_GE(capacity, size_t{300} * 200 * 3);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(decode(jpeg, buffer, CropRect{10, 10, 100, 100}).is_ok());
    ASSERT_TRUE(decode(png, buffer).is_ok());
    EXPECT_EQ(buffer.capacity(), capacity);
  }
}

}  // namespace
}  // namespace stoker::image::test
