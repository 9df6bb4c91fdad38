#include "stoker/image/decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "stoker/image/test_images.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::image::test {
namespace {

using stoker::testing::TempDir;
using testing::encode_jpeg;
using testing::encode_png;
using testing::JpegSpec;
using testing::PngSpec;

ByteSpan span(const std::vector<uint8_t>& bytes) { return {bytes.data(), bytes.size()}; }

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// The view's pixels, rows packed.
std::vector<uint8_t> packed(const RgbView& view) {
  std::vector<uint8_t> out;
  for (int y = 0; y < view.height; ++y) {
    out.insert(out.end(), view.row(y), view.row(y) + size_t(view.width) * 3);
  }
  return out;
}

// Rectangle `r` of a packed RGB image `width` pixels wide.
std::vector<uint8_t> rectangle(const std::vector<uint8_t>& image, int width, const CropRect& r) {
  std::vector<uint8_t> out;
  for (int y = r.y; y < r.y + r.height; ++y) {
    const auto row = image.begin() + (size_t(y) * width + r.x) * 3;
    out.insert(out.end(), row, row + size_t(r.width) * 3);
  }
  return out;
}

// How many bytes differ, by how much at most, and where the first is (pixel x, y in an image
// `width` pixels wide), for failure messages.
std::string difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                       int width = 0) {
  if (a.size() != b.size()) {
    return "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  }
  size_t count = 0, first = a.size();
  int max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int d = std::abs(int{a[i]} - int{b[i]});
    if (d != 0 && count++ == 0) first = i;
    max_diff = std::max(max_diff, d);
  }
  std::string where;
  if (width > 0 && count > 0) {
    where = ", first at pixel (" + std::to_string(first / 3 % width) + ", " +
            std::to_string(first / 3 / width) + ")";
  }
  return std::to_string(count) + " of " + std::to_string(a.size()) + " bytes differ, by up to " +
         std::to_string(max_diff) + where;
}

Result<DecodedCrop> decode(const std::vector<uint8_t>& bytes, DecodeBuffer& buffer,
                           std::optional<CropRect> crop = std::nullopt, int min_width = 0,
                           int min_height = 0) {
  DecodeRequest request;
  request.crop = crop;
  request.min_width = min_width;
  request.min_height = min_height;
  return decode_rgb(span(bytes), request, buffer);
}

// One test image: its bytes, and PIL's np.asarray(Image.open(p).convert("RGB")) if known.
struct Fixture {
  std::string name;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> pil_rgb;       // empty without PIL
  std::vector<uint8_t> pil_half_rgb;  // JPEG: PIL's decode after draft() to half size
};

// Writes the images PIL makes (the PIL writer's settings: 4:2:0 by default, Adobe CMYK, EXIF and
// ICC markers), then PIL's RGB decode of every image in the directory (those written by the
// test too): NAME.rgb; for JPEGs also NAME.half.rgb, decoded after draft() to half size (DCT
// scale 1/2). A file PIL cannot read gets NAME.err.
constexpr const char* kPilScript = R"(
import os, sys
import numpy as np
from PIL import Image, ImageCms
d = sys.argv[1]
rs = np.random.RandomState(1)
def photo(w, h):
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1),
                     (x + y) * 127 // max(w + h - 2, 1)], -1)
    return np.clip(base + rs.randint(-24, 25, (h, w, 3)), 0, 255).astype(np.uint8)
rgb = Image.fromarray(photo(203, 157))
rgb.save(f'{d}/pil_420.jpg', quality=90)
rgb.save(f'{d}/pil_422.jpg', quality=90, subsampling=1)
rgb.save(f'{d}/pil_444.jpg', quality=90, subsampling=0)
rgb.save(f'{d}/pil_progressive.jpg', quality=85, progressive=True)
rgb.convert('L').save(f'{d}/pil_gray.jpg', quality=90)
rgb.convert('CMYK').save(f'{d}/pil_cmyk.jpg', quality=90)
exif = Image.Exif()
exif[0x0112] = 6
icc = ImageCms.ImageCmsProfile(ImageCms.createProfile('sRGB')).tobytes()
rgb.save(f'{d}/pil_exif_icc.jpg', quality=90, exif=exif, icc_profile=icc)
Image.fromarray(photo(1, 1)).save(f'{d}/pil_1x1.jpg')
rgb.save(f'{d}/pil_rgb.png')
rgba = rgb.copy()
rgba.putalpha(Image.fromarray(photo(203, 157)[..., 0]))
rgba.save(f'{d}/pil_rgba.png')
rgb.convert('L').save(f'{d}/pil_gray.png')
rgb.convert('LA').save(f'{d}/pil_la.png')
rgb.convert('P', palette=Image.ADAPTIVE, colors=200).save(f'{d}/pil_palette_trns.png',
                                                         transparency=3)
rgb.convert('P', palette=Image.ADAPTIVE, colors=16).save(f'{d}/pil_palette4.png', bits=4)
rgb.convert('1').save(f'{d}/pil_bilevel.png')
Image.fromarray((np.arange(157 * 203).reshape(157, 203) % 1200).astype(np.uint16)).save(
    f'{d}/pil_gray16.png')
Image.fromarray(photo(1, 1)).save(f'{d}/pil_1x1.png')
for name in sorted(os.listdir(d)):
    if not name.endswith(('.jpg', '.png')):
        continue
    path = os.path.join(d, name)
    try:
        with open(path + '.rgb', 'wb') as f:
            f.write(np.asarray(Image.open(path).convert('RGB')).tobytes())
        if name.endswith('.jpg'):
            im = Image.open(path)
            im.draft('RGB', (im.size[0] // 2, im.size[1] // 2))
            with open(path + '.half.rgb', 'wb') as f:
                f.write(np.asarray(im.convert('RGB')).tobytes())
    except Exception as e:
        with open(path + '.err', 'w') as f:
            f.write(str(e))
)";

// The images the test encodes itself: what PIL cannot write (YCCK, CMYK without an Adobe marker,
// arithmetic coding, restart markers, 16-bit colour, interlacing, 2-bit gray), and corrupt
// entropy-coded data, which libjpeg and PIL decode anyway.
std::vector<std::pair<std::string, std::vector<uint8_t>>> encoded_fixtures() {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  auto jpeg = [&](const std::string& name, JpegSpec spec) {
    spec.width = 181;
    spec.height = 133;
    out.emplace_back(name, encode_jpeg(spec));
  };
  JpegSpec spec;
  jpeg("enc_420.jpg", spec);
  spec.restart_rows = 1;
  jpeg("enc_420_restart.jpg", spec);
  spec = JpegSpec();
  spec.h_sampling = 2, spec.v_sampling = 1;
  jpeg("enc_422.jpg", spec);
  spec = JpegSpec();
  spec.h_sampling = 1, spec.v_sampling = 2;
  jpeg("enc_440.jpg", spec);
  spec = JpegSpec();
  spec.h_sampling = spec.v_sampling = 1;
  jpeg("enc_444.jpg", spec);
  spec = JpegSpec();
  spec.components = 1;
  jpeg("enc_gray.jpg", spec);
  spec.progressive = true;
  jpeg("enc_gray_progressive.jpg", spec);
  spec = JpegSpec();
  spec.components = 4;
  jpeg("enc_cmyk.jpg", spec);
  spec.progressive = true;
  jpeg("enc_cmyk_progressive.jpg", spec);
  spec = JpegSpec();
  spec.components = 4;
  spec.ycck = true;
  jpeg("enc_ycck.jpg", spec);
  spec = JpegSpec();
  spec.components = 4;
  spec.adobe_marker = false;
  jpeg("enc_cmyk_no_adobe.jpg", spec);
  spec = JpegSpec();
  spec.arithmetic = true;
  jpeg("enc_arithmetic.jpg", spec);
  spec = JpegSpec();
  spec.progressive = true;
  spec.restart_rows = 1;
  jpeg("enc_progressive_restart.jpg", spec);

  // Flipped bits in the middle of the scan: libjpeg warns and resynchronises.
  std::vector<uint8_t> corrupt = encode_jpeg(JpegSpec());
  const size_t sos = testing::find_jpeg_marker(corrupt, 0xDA);
  for (size_t i = sos + (corrupt.size() - sos) / 2; i < sos + (corrupt.size() - sos) / 2 + 8; ++i) {
    if (corrupt[i] != 0xFF && corrupt[i] != 0x00) corrupt[i] ^= 0x55;
  }
  out.emplace_back("enc_corrupt_scan.jpg", corrupt);

  auto png = [&](const std::string& name, int color_type, int depth, bool interlaced) {
    out.emplace_back(name, encode_png({77, 51, color_type, depth, interlaced}));
  };
  png("enc_rgb16.png", 2, 16, false);
  png("enc_rgba16.png", 6, 16, false);
  png("enc_ga16.png", 4, 16, false);
  png("enc_gray16.png", 0, 16, false);
  png("enc_gray2.png", 0, 2, false);
  png("enc_palette2.png", 3, 2, false);
  png("enc_rgb_interlaced.png", 2, 8, true);
  png("enc_gray16_interlaced.png", 0, 16, true);
  png("enc_palette_interlaced.png", 3, 8, true);
  return out;
}

class DecodeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    for (auto& [name, bytes] : encoded_fixtures()) {
      ASSERT_FALSE(bytes.empty()) << name;
      write_file(*dir_ / name, bytes);
    }
    std::ofstream(*dir_ / "make.py") << kPilScript;
    has_pil_ = std::system(("/usr/bin/python3 " + (*dir_ / "make.py") + " " + dir_->path() +
                            " >/dev/null 2>&1")
                               .c_str()) == 0;
    fixtures_ = new std::vector<Fixture>();
    for (const auto& entry : std::filesystem::directory_iterator(dir_->path())) {
      const std::string path = entry.path().string();
      const std::string ext = entry.path().extension().string();
      if (ext != ".jpg" && ext != ".png") continue;
      fixtures_->push_back({entry.path().filename().string(), read_file(path),
                            read_file(path + ".rgb"), read_file(path + ".half.rgb")});
    }
    std::sort(fixtures_->begin(), fixtures_->end(),
              [](const Fixture& a, const Fixture& b) { return a.name < b.name; });
  }
  static void TearDownTestSuite() {
    delete fixtures_;
    delete dir_;
  }

  static TempDir* dir_;
  static std::vector<Fixture>* fixtures_;
  static bool has_pil_;
};

TempDir* DecodeTest::dir_ = nullptr;
std::vector<Fixture>* DecodeTest::fixtures_ = nullptr;
bool DecodeTest::has_pil_ = false;

TEST_F(DecodeTest, FullDecodeEqualsPilConvertRgb) {
  if (!has_pil_) GTEST_SKIP() << "/usr/bin/python3 with PIL is not available";
  DecodeBuffer buffer;
  int compared = 0;
  for (const Fixture& f : *fixtures_) {
    SCOPED_TRACE(f.name);
    Result<DecodedCrop> decoded = decode(f.bytes, buffer);
    ASSERT_TRUE(decoded.is_ok()) << decoded.status().message();
    const DecodedCrop& d = decoded.value();
    EXPECT_EQ(d.scale_num, 8);
    EXPECT_EQ(d.box.x0, 0);
    EXPECT_EQ(d.box.x1, d.pixels.width);
    EXPECT_EQ(d.box.y1, d.pixels.height);
    const std::vector<uint8_t> ours = packed(d.pixels);
    ASSERT_FALSE(f.pil_rgb.empty())
        << "PIL could not read it: " << read_file(*dir_ / (f.name + ".err")).size();
    EXPECT_TRUE(ours == f.pil_rgb) << difference(ours, f.pil_rgb);
    ++compared;
  }
  EXPECT_GE(compared, 40);
}

// Random crops inside a width x height image, the whole image and its corner pixels first.
std::vector<CropRect> crops_of(int width, int height, int count, uint32_t seed) {
  std::vector<CropRect> crops = {{0, 0, width, height},
                                 {0, 0, 1, 1},
                                 {width - 1, height - 1, 1, 1},
                                 {width - 1, 0, 1, height},
                                 {0, height - 1, width, 1}};
  std::mt19937 rng(seed);
  while (static_cast<int>(crops.size()) < count) {
    const int w = std::uniform_int_distribution<int>(1, width)(rng);
    const int h = std::uniform_int_distribution<int>(1, height)(rng);
    crops.push_back({std::uniform_int_distribution<int>(0, width - w)(rng),
                     std::uniform_int_distribution<int>(0, height - h)(rng), w, h});
  }
  return crops;
}

TEST_F(DecodeTest, CropDecodeEqualsTheSameRectangleOfTheFullDecode) {
  DecodeBuffer full_buffer;
  DecodeBuffer crop_buffer;
  for (const Fixture& f : *fixtures_) {
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

bool is_jpeg(const Fixture& f) {
  return f.name.size() > 4 && f.name.substr(f.name.size() - 4) == ".jpg";
}

TEST_F(DecodeTest, HalfScaleDecodeEqualsPilDraft) {
  if (!has_pil_) GTEST_SKIP() << "/usr/bin/python3 with PIL is not available";
  DecodeBuffer buffer;
  for (const Fixture& f : *fixtures_) {
    if (!is_jpeg(f)) continue;
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
    EXPECT_TRUE(ours == f.pil_half_rgb) << difference(ours, f.pil_half_rgb);
  }
}

TEST_F(DecodeTest, ScaledCropDecodeEqualsTheScaledFullDecodeAndSaysWhereTheCropIs) {
  DecodeBuffer full_buffer;
  DecodeBuffer crop_buffer;
  for (const Fixture& f : *fixtures_) {
    if (!is_jpeg(f) || f.name.find("1x1") != std::string::npos) continue;
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
