#include "stoker/testing/image_fixtures.h"

#include <gtest/gtest.h>
#include <jconfig.h>  // LIBJPEG_TURBO_VERSION_NUMBER

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <utility>

#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"

namespace stoker::image::testing {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// Writes the images PIL makes, then PIL's RGB decode of every image in the directory (those
// written by the test encoder too): NAME.rgb; for JPEGs also NAME.half.rgb, decoded after
// draft() to half size (DCT scale 1/2). A file PIL cannot read gets NAME.err instead.
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
from PIL import features
with open(f'{d}/libjpeg_turbo.txt', 'w') as f:
    f.write(features.version('libjpeg_turbo') or '')
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

// The images the test encoder writes.
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
  spec = JpegSpec();
  spec.partial_scans = true;
  jpeg("enc_partial_scans.jpg", spec);

  // Flipped bits in the middle of the scan: libjpeg warns and resynchronises, as in PIL.
  std::vector<uint8_t> corrupt = encode_jpeg(JpegSpec());
  const size_t middle = find_jpeg_marker(corrupt, 0xDA) / 2 + corrupt.size() / 2;
  for (size_t i = middle; i < middle + 8; ++i) {
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

struct FixtureSet {
  stoker::testing::TempDir dir;
  std::vector<Fixture> fixtures;
  bool have_pil = false;
  std::string pil_libjpeg_turbo;  // PIL's libjpeg-turbo version, e.g. "3.1.2"

  FixtureSet() {
    for (auto& [name, bytes] : encoded_fixtures()) {
      if (bytes.empty()) std::abort();  // the test encoder refused its own spec
      write_file(dir / name, bytes);
    }
    std::ofstream(dir / "make.py") << kPilScript;
    have_pil =
        std::system((STOKER_PYTHON " " + (dir / "make.py") + " " + dir.path() + " >/dev/null 2>&1")
                        .c_str()) == 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      const std::string path = entry.path().string();
      const std::string ext = entry.path().extension().string();
      if (ext != ".jpg" && ext != ".png") continue;
      fixtures.push_back({entry.path().filename().string(), read_file(path),
                          read_file(path + ".rgb"), read_file(path + ".half.rgb")});
    }
    std::ifstream(dir / "libjpeg_turbo.txt") >> pil_libjpeg_turbo;
    std::sort(fixtures.begin(), fixtures.end(),
              [](const Fixture& a, const Fixture& b) { return a.name < b.name; });
  }
};

const FixtureSet& fixture_set() {
  static const FixtureSet set;
  return set;
}

}  // namespace

bool Fixture::is_jpeg() const {
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".jpg") == 0;
}

const std::vector<Fixture>& image_fixtures() { return fixture_set().fixtures; }

bool have_pil() { return fixture_set().have_pil; }

const std::string& pil_libjpeg_turbo() { return fixture_set().pil_libjpeg_turbo; }

bool pil_libjpeg_turbo_is_ours() {
  const int ours = LIBJPEG_TURBO_VERSION_NUMBER / 1000;  // major * 1000 + minor
  int major = 0, minor = 0;
  return std::sscanf(pil_libjpeg_turbo().c_str(), "%d.%d", &major, &minor) == 2 &&
         major * 1000 + minor == ours;
}

std::vector<uint8_t> packed(const RgbView& view) {
  std::vector<uint8_t> out;
  for (int y = 0; y < view.height; ++y) {
    out.insert(out.end(), view.row(y), view.row(y) + size_t(view.width) * 3);
  }
  return out;
}

std::vector<uint8_t> rectangle(const std::vector<uint8_t>& image, int width, const CropRect& r) {
  std::vector<uint8_t> out;
  for (int y = r.y; y < r.y + r.height; ++y) {
    const auto row = image.begin() + static_cast<ptrdiff_t>((size_t(y) * width + r.x) * 3);
    out.insert(out.end(), row, row + r.width * 3);
  }
  return out;
}

std::string difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int width) {
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

void expect_error(const Status& status, StatusCode code, const std::string& part) {
  ASSERT_FALSE(status.is_ok());
  EXPECT_EQ(status.code(), code) << status.message();
  EXPECT_NE(status.message().find(part), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
}

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

}  // namespace stoker::image::testing
