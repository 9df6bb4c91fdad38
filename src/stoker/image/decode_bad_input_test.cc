// decode_rgb on bad input: every failure a one-line Status, never a crash (the asan stage of
// scripts/test.sh runs these under ASan + UBSan).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/image/resample.h"
#include "stoker/testing/image_fixtures.h"
#include "stoker/testing/test_images.h"

namespace stoker::image::test {
namespace {

using testing::encode_jpeg;
using testing::encode_png;
using testing::expect_error;
using testing::JpegSpec;
using testing::PngSpec;

Result<DecodedCrop> decode(const std::vector<uint8_t>& bytes,
                           std::optional<CropRect> crop = std::nullopt) {
  static thread_local DecodeBuffer buffer;
  DecodeRequest request;
  request.crop = crop;
  return decode_rgb({bytes.data(), bytes.size()}, request, buffer);
}

std::vector<uint8_t> prefix(const std::vector<uint8_t>& bytes, size_t size) {
  return {bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(size)};
}

TEST(DecodeBadInputTest, EmptyAndNonImageBytesAreCorrupt) {
  expect_error(decode({}), StatusCode::kCorrupt, "empty");
  std::vector<uint8_t> random(1000);
  uint32_t x = 99;
  for (uint8_t& b : random) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  random[0] = 0x00;
  expect_error(decode(random), StatusCode::kCorrupt, "not a JPEG or PNG");
  // Random bytes behind either magic.
  for (const std::vector<uint8_t>& magic :
       {std::vector<uint8_t>{0xFF, 0xD8, 0xFF},
        std::vector<uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}}) {
    std::vector<uint8_t> bytes = random;
    std::copy(magic.begin(), magic.end(), bytes.begin());
    expect_error(decode(bytes), StatusCode::kCorrupt, magic[0] == 0xFF ? "JPEG: " : "PNG: ");
  }
}

TEST(DecodeBadInputTest, TruncatedJpegIsCorruptUnlessTheCropEndsAboveTheCut) {
  JpegSpec spec;
  spec.width = 64;
  spec.height = 256;
  const std::vector<uint8_t> jpeg = encode_jpeg(spec);
  const std::vector<uint8_t> cut = prefix(jpeg, jpeg.size() * 3 / 4);
  expect_error(decode(cut), StatusCode::kCorrupt, "JPEG: truncated");
  expect_error(decode(cut, CropRect{0, 200, 64, 56}), StatusCode::kCorrupt, "JPEG: truncated");
  // Rows above the cut are there: a crop of them decodes (the documented exception).
  EXPECT_TRUE(decode(cut, CropRect{0, 0, 64, 32}).is_ok());
  // Without its end-of-image marker: a decode down to the last row reads on to it and fails,
  // as PIL does ("image file is truncated").
  const std::vector<uint8_t> no_eoi = prefix(jpeg, jpeg.size() - 2);
  expect_error(decode(no_eoi), StatusCode::kCorrupt, "JPEG: truncated");
  expect_error(decode(no_eoi, CropRect{0, 250, 64, 6}), StatusCode::kCorrupt, "JPEG: truncated");
  EXPECT_TRUE(decode(no_eoi, CropRect{0, 0, 64, 200}).is_ok());  // above the last MCU row
  // A progressive JPEG is read whole before its first row: truncated is truncated.
  spec.progressive = true;
  const std::vector<uint8_t> progressive = encode_jpeg(spec);
  expect_error(decode(prefix(progressive, progressive.size() * 3 / 4), CropRect{0, 0, 64, 32}),
               StatusCode::kCorrupt, "JPEG: truncated");
  // The same with a restart marker every MCU row, where a crop's decode starts at the marker
  // above it: below the cut still truncated, above it still fine.
  spec.progressive = false;
  spec.restart_rows = 1;
  const std::vector<uint8_t> restarts = encode_jpeg(spec);
  const std::vector<uint8_t> restarts_cut = prefix(restarts, restarts.size() * 3 / 4);
  expect_error(decode(restarts_cut, CropRect{0, 200, 64, 56}), StatusCode::kCorrupt,
               "JPEG: truncated");
  EXPECT_TRUE(decode(restarts_cut, CropRect{0, 64, 64, 32}).is_ok());
  // Every cut is an error or a decode: no crash.
  for (size_t size = 0; size < jpeg.size(); size += 37) {
    Result<DecodedCrop> d = decode(prefix(jpeg, size));
    if (!d.is_ok()) {
      EXPECT_EQ(d.status().message().find('\n'), std::string::npos);
    }
  }
}

// Restart intervals inside rows (two MCUs, 32 px: four to a row; transcode_jpeg_for_crops
// writes such files), damaged. A crop decodes only the intervals it touches where the markers
// are in sequence; wherever they are not, the crop's pixels are still the same rectangle of the
// whole image's decode (libjpeg resynchronises, and PIL's pixels are libjpeg's).
TEST(DecodeBadInputTest, DamagedRestartMarkersInsideRowsDecodeAsTheWholeImageDoes) {
  JpegSpec spec;
  spec.width = 128;
  spec.height = 160;
  spec.restart_mcus = 2;
  const std::vector<uint8_t> jpeg = encode_jpeg(spec);
  std::vector<size_t> markers;
  for (size_t i = testing::find_jpeg_marker(jpeg, 0xDA); i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] >= 0xD0 && jpeg[i + 1] <= 0xD7) markers.push_back(i);
  }
  ASSERT_EQ(markers.size(), 4u * 10 - 1);
  const auto at = [&](size_t m) { return static_cast<ptrdiff_t>(markers[m]); };
  std::vector<std::pair<std::string, std::vector<uint8_t>>> damaged;
  damaged.emplace_back("intact", jpeg);
  std::vector<uint8_t> bytes = jpeg;
  bytes[markers[13] + 1] = static_cast<uint8_t>(0xD0 + (bytes[markers[13] + 1] - 0xD0 + 2) % 8);
  damaged.emplace_back("out of sequence", bytes);
  bytes = jpeg;
  bytes.erase(bytes.begin() + at(13), bytes.begin() + at(13) + 2);
  damaged.emplace_back("missing", bytes);
  bytes = jpeg;
  bytes.insert(bytes.begin() + at(13), jpeg.begin() + at(13), jpeg.begin() + at(13) + 2);
  damaged.emplace_back("duplicated", bytes);
  bytes = jpeg;
  bytes.erase(bytes.begin() + at(13) - 6, bytes.begin() + at(13));
  damaged.emplace_back("an interval cut short", bytes);
  for (const auto& [name, file] : damaged) {
    SCOPED_TRACE(name);
    Result<DecodedCrop> whole = decode(file);
    ASSERT_TRUE(whole.is_ok()) << whole.status().message();
    const std::vector<uint8_t> all = testing::packed(whole.value().pixels);
    // Crops touching each edge, all four, none, and across the damage (interval 13: MCU row
    // 3, columns 32..63).
    for (const CropRect& c :
         {CropRect{0, 0, 128, 160}, CropRect{40, 50, 30, 40}, CropRect{0, 70, 20, 90},
          CropRect{100, 0, 28, 30}, CropRect{33, 100, 95, 60}, CropRect{64, 64, 1, 1}}) {
      SCOPED_TRACE(::testing::Message()
                   << c.width << "x" << c.height << " at " << c.x << "," << c.y);
      Result<DecodedCrop> d = decode(file, c);
      ASSERT_TRUE(d.is_ok()) << d.status().message();
      EXPECT_TRUE(testing::packed(d.value().pixels) == testing::rectangle(all, 128, c));
    }
  }
  // Cut short inside the data: crops below the cut are truncated, crops above it are not.
  const std::vector<uint8_t> cut = prefix(jpeg, markers[25] + 1);
  expect_error(decode(cut, CropRect{40, 120, 30, 40}), StatusCode::kCorrupt, "JPEG: truncated");
  EXPECT_TRUE(decode(cut, CropRect{40, 20, 30, 30}).is_ok());
}

// The decoders are reused from image to image (per thread): a JPEG without its quantisation
// tables is still an error after one with them, not decoded with the last image's tables.
TEST(DecodeBadInputTest, AJpegWithoutTablesDoesNotBorrowTheLastImages) {
  const std::vector<uint8_t> jpeg = encode_jpeg(JpegSpec());
  std::vector<uint8_t> no_dqt = jpeg;
  for (size_t dqt; (dqt = testing::find_jpeg_marker(no_dqt, 0xDB)) != SIZE_MAX;) {
    const size_t length = size_t{no_dqt[dqt + 2]} << 8 | no_dqt[dqt + 3];
    no_dqt.erase(no_dqt.begin() + static_cast<ptrdiff_t>(dqt),
                 no_dqt.begin() + static_cast<ptrdiff_t>(dqt + 2 + length));
  }
  ASSERT_TRUE(decode(jpeg).is_ok());
  expect_error(decode(no_dqt), StatusCode::kCorrupt, "Quantization table");
  ASSERT_TRUE(decode(jpeg, CropRect{8, 8, 40, 30}).is_ok());
  expect_error(decode(no_dqt, CropRect{8, 8, 40, 30}), StatusCode::kCorrupt, "Quantization table");
}

TEST(DecodeBadInputTest, TruncatedPngIsCorrupt) {
  PngSpec spec;
  spec.width = 64;
  spec.height = 256;
  const std::vector<uint8_t> png = encode_png(spec);
  expect_error(decode(prefix(png, png.size() * 3 / 4)), StatusCode::kCorrupt, "PNG: ");
  spec.interlaced = true;
  const std::vector<uint8_t> interlaced = encode_png(spec);
  expect_error(decode(prefix(interlaced, interlaced.size() - 20)), StatusCode::kCorrupt, "PNG: ");
  for (size_t size = 0; size < png.size(); size += 37) {
    Result<DecodedCrop> d = decode(prefix(png, size));
    if (!d.is_ok()) {
      EXPECT_EQ(d.status().message().find('\n'), std::string::npos);
    }
  }
}

// The loader streams a crop's rows into the resize: a cut or damaged file fails there as the
// decode of the crop does (the same one-line error), or, where the decode succeeds, gives the
// resize of its pixels. JPEGs (baseline, restart intervals inside rows, progressive, CMYK) and
// PNGs (RGB, 16-bit gray, interlaced) cut at many points, crops above, across and below the cut
// and touching every edge.
TEST(DecodeBadInputTest, StreamedDecodesFailAsTheDecodeDoes) {
  std::vector<std::vector<uint8_t>> files;
  JpegSpec jpeg;
  jpeg.width = 96;
  jpeg.height = 256;
  files.push_back(encode_jpeg(jpeg));
  jpeg.restart_mcus = 2;
  files.push_back(encode_jpeg(jpeg));
  jpeg.restart_mcus = 0;
  jpeg.progressive = true;
  files.push_back(encode_jpeg(jpeg));
  jpeg.progressive = false;
  jpeg.components = 4;
  files.push_back(encode_jpeg(jpeg));
  PngSpec png;
  png.width = 96;
  png.height = 256;
  files.push_back(encode_png(png));
  png.interlaced = true;
  files.push_back(encode_png(png));
  png.interlaced = false;
  png.color_type = 0;
  png.bit_depth = 16;
  files.push_back(encode_png(png));
  const CropRect crops[] = {{0, 0, 96, 256}, {0, 0, 96, 40}, {10, 100, 50, 60}, {30, 200, 66, 56}};
  Resampler resampler;
  ResampleOutput out;
  out.width = out.height = 32;
  out.type = ResampleOutput::Type::kUint8;
  DecodeBuffer buffer;
  int failed = 0, decoded = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    for (size_t size = files[f].size() / 3; size <= files[f].size(); size += 97) {
      const std::vector<uint8_t> cut = prefix(files[f], size);
      for (const CropRect& crop : crops) {
        SCOPED_TRACE(::testing::Message()
                     << "file " << f << " cut at " << size << " crop " << crop.x << "," << crop.y);
        DecodeRequest request;
        request.crop = crop;
        std::vector<uint8_t> streamed(3 * 32 * 32), materialised(3 * 32 * 32);
        Result<DecodedCrop> d = decode_rgb({cut.data(), cut.size()}, request, buffer);
        if (d.is_ok()) {
          ASSERT_TRUE(resampler.resample(d.value().pixels, d.value().box, out, materialised.data())
                          .is_ok());
        }
        Result<DecodedRows*> rows = decode_rgb_rows({cut.data(), cut.size()}, request, buffer);
        Status s = rows.status();
        if (rows.is_ok())
          s = resampler.resample(*rows.value(), rows.value()->box, out, streamed.data());
        ASSERT_EQ(s.is_ok(), d.is_ok()) << s.message() << " / " << d.status().message();
        if (d.is_ok()) {
          EXPECT_TRUE(streamed == materialised);
          ++decoded;
        } else {
          EXPECT_EQ(s.code(), d.status().code());
          EXPECT_EQ(s.message(), d.status().message());
          EXPECT_EQ(s.message().find('\n'), std::string::npos);
          ++failed;
        }
      }
    }
  }
  EXPECT_GT(failed, 50);
  EXPECT_GT(decoded, 20);
}

TEST(DecodeBadInputTest, CorruptHuffmanTablesAreCorrupt) {
  const std::vector<uint8_t> jpeg = encode_jpeg(JpegSpec());
  const size_t dht = testing::find_jpeg_marker(jpeg, 0xC4);
  ASSERT_NE(dht, SIZE_MAX);
  // DHT: FF C4, length (2), class/id (1), 16 code counts, the symbols.
  const size_t counts = dht + 5;
  // More symbols than a table holds.
  std::vector<uint8_t> too_many = jpeg;
  too_many[counts + 15] = 250;
  expect_error(decode(too_many), StatusCode::kCorrupt, "Huffman");
  // Three codes of one bit: not a prefix code.
  std::vector<uint8_t> overfull = jpeg;
  int moved = 0;
  for (int i = 15; i > 0 && moved < 3 - overfull[counts]; --i) {
    while (overfull[counts + i] > 0 && moved < 3 - jpeg[counts]) {
      --overfull[counts + i];
      ++moved;
    }
  }
  overfull[counts] = static_cast<uint8_t>(overfull[counts] + moved);
  ASSERT_EQ(overfull[counts], 3);
  expect_error(decode(overfull), StatusCode::kCorrupt, "Huffman");
  // Found from the header already: it sets the entropy decoder up.
  expect_error(read_image_header({overfull.data(), overfull.size()}), StatusCode::kCorrupt,
               "Huffman");
}

TEST(DecodeBadInputTest, JpegOfTooManyScansIsUnsupported) {
  JpegSpec spec;
  spec.progressive = true;
  const std::vector<uint8_t> jpeg = encode_jpeg(spec);
  // The last scan (its SOS up to EOI) repeated: libjpeg warns of a bogus progression and goes
  // on, a pass over the whole image per scan.
  size_t last_sos = 0;
  for (size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) last_sos = i;
  }
  ASSERT_GT(last_sos, 0u);
  auto repeated = [&](int times) {
    std::vector<uint8_t> out(jpeg.begin(), jpeg.end() - 2);
    for (int i = 0; i < times; ++i) out.insert(out.end(), jpeg.begin() + last_sos, jpeg.end() - 2);
    out.insert(out.end(), {0xFF, 0xD9});
    return out;
  };
  EXPECT_TRUE(decode(repeated(10)).is_ok());
  expect_error(decode(repeated(600)), StatusCode::kUnsupported, "JPEG: more than 500 scans");
  expect_error(decode(repeated(600), CropRect{0, 0, 8, 8}), StatusCode::kUnsupported,
               "JPEG: more than 500 scans");
}

TEST(DecodeBadInputTest, TwelveBitJpegIsUnsupported) {
  std::vector<uint8_t> jpeg = encode_jpeg(JpegSpec());
  const size_t sof = testing::find_jpeg_marker(jpeg, 0xC0);
  jpeg[sof + 1] = 0xC1;  // extended sequential, where 12 bits are allowed
  jpeg[sof + 4] = 12;
  expect_error(decode(jpeg), StatusCode::kUnsupported, "precision 12");
}

TEST(DecodeBadInputTest, DeclaredHugeImagesFailFastOnThePixelCap) {
  std::vector<uint8_t> jpeg = encode_jpeg(JpegSpec());
  const size_t sof = testing::find_jpeg_marker(jpeg, 0xC0);
  testing::put_u16_be(jpeg, sof + 5, 65535);
  testing::put_u16_be(jpeg, sof + 7, 65535);
  std::vector<uint8_t> png = encode_png(PngSpec());
  testing::put_u32_be(png, 16, 65535);
  testing::put_u32_be(png, 20, 65535);
  testing::fix_png_crc(png, 8);
  const auto start = std::chrono::steady_clock::now();
  expect_error(decode(jpeg), StatusCode::kUnsupported, "over the cap");
  expect_error(decode(png), StatusCode::kUnsupported, "over the cap");
  // Nothing was decoded (12 GB of RGB would have been: minutes, if memory allowed).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  // Under the cap but with the data of a 40x30 image: libspng runs out of data.
  std::vector<uint8_t> tall = encode_png(PngSpec());
  testing::put_u32_be(tall, 20, 3000);
  testing::fix_png_crc(tall, 8);
  expect_error(decode(tall), StatusCode::kCorrupt, "PNG: ");
}

TEST(DecodeBadInputTest, PngCrcErrorInTheImageDataIsCorrupt) {
  std::vector<uint8_t> png = encode_png(PngSpec());
  // The CRC is the last 4 bytes of the IDAT chunk, which ends 12 bytes before the file (IEND).
  png[png.size() - 12 - 1] ^= 0x01;
  expect_error(decode(png), StatusCode::kCorrupt, "PNG: ");
}

TEST(DecodeBadInputTest, OneByOneImagesDecode) {
  for (const std::vector<uint8_t>& bytes :
       {encode_jpeg({1, 1}), encode_jpeg({1, 1, 1}), encode_jpeg({1, 1, 4}), encode_png({1, 1}),
        encode_png({1, 1, 3, 1})}) {
    Result<DecodedCrop> d = decode(bytes);
    ASSERT_TRUE(d.is_ok()) << d.status().message();
    EXPECT_EQ(d.value().pixels.width, 1);
    EXPECT_EQ(d.value().pixels.height, 1);
  }
}

TEST(DecodeBadInputTest, CropsNotInsideTheImageAreInvalidArguments) {
  for (const std::vector<uint8_t>& bytes : {encode_jpeg({64, 48}), encode_png({64, 48})}) {
    for (const CropRect& c :
         {CropRect{-1, 0, 10, 10}, CropRect{0, -1, 10, 10}, CropRect{0, 0, 0, 10},
          CropRect{0, 0, 10, 0}, CropRect{55, 0, 10, 10}, CropRect{0, 40, 10, 10},
          CropRect{0, 0, 65, 48}, CropRect{2147483647, 0, 1, 1}}) {
      SCOPED_TRACE(::testing::Message() << c.x << "," << c.y << " " << c.width << "x" << c.height);
      expect_error(decode(bytes, c), StatusCode::kInvalidArgument, "not inside the 64x48 image");
    }
    EXPECT_TRUE(decode(bytes, CropRect{54, 38, 10, 10}).is_ok());
  }
}

}  // namespace
}  // namespace stoker::image::test
