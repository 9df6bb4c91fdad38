#pragma once
// Test fixtures shared by the decode and transcode tests: a set of JPEGs and PNGs, each with
// PIL's decode of it (np.asarray(Image.open(p).convert("RGB"))) when the build's Python
// (STOKER_PYTHON) has PIL, and helpers to compare pixels. Test-only.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/image/decode.h"

namespace stoker::image::testing {

// One test image: its bytes, and what PIL decodes from it (empty without PIL).
struct Fixture {
  std::string name;  // file name: *.jpg or *.png
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> pil_rgb;       // PIL's convert("RGB"), rows packed
  std::vector<uint8_t> pil_half_rgb;  // JPEG: the same after draft() to half size (DCT 1/2)

  bool is_jpeg() const;
};

// The fixtures, made once per process (in a temporary directory removed at exit): what PIL
// writes (4:2:0, 4:2:2, 4:4:4, gray, progressive, Adobe CMYK, EXIF orientation + ICC, 1x1; PNG
// RGB, RGBA, L, LA, palette with tRNS, 4-bit palette, 1-bit, 16-bit gray, 1x1) and what the
// test encoder writes that PIL cannot (4:4:0, YCCK, CMYK without an Adobe marker, arithmetic
// coding, restart markers, progressive CMYK, a progressive scan script that leaves bits unsent,
// corrupt entropy data; 16-bit RGB, RGBA and gray +
// alpha, 2-bit gray and palette, interlaced). Sorted by name.
const std::vector<Fixture>& image_fixtures();

// Whether the fixtures carry PIL's decodes.
bool have_pil();

// The libjpeg-turbo release PIL decodes with ("3.1.2"; empty without PIL), and whether it is
// of the same release line (major.minor) as the libjpeg-turbo stoker links. Lines differ in how
// they smooth the blocks of a progressive JPEG whose scans leave coefficients unsent.
const std::string& pil_libjpeg_turbo();
bool pil_libjpeg_turbo_is_ours();

// The view's pixels, rows packed.
std::vector<uint8_t> packed(const RgbView& view);

// Rectangle `r` of a packed RGB image `width` pixels wide.
std::vector<uint8_t> rectangle(const std::vector<uint8_t>& image, int width, const CropRect& r);

// How many bytes differ, by how much at most, and where the first is (pixel x, y in an image
// `width` pixels wide, if given), for failure messages.
std::string difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int width = 0);

// Checks (GoogleTest) that `status` is an error of `code` whose message is one line and holds
// `part`.
void expect_error(const Status& status, StatusCode code, const std::string& part);
template <typename T>
void expect_error(const Result<T>& result, StatusCode code, const std::string& part) {
  expect_error(result.status(), code, part);
}

// `count` crops inside a width x height image: the whole image, its corner pixels, its last
// column and row, then random ones from `seed`.
std::vector<CropRect> crops_of(int width, int height, int count, uint32_t seed);

}  // namespace stoker::image::testing
