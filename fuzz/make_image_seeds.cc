// Writes the seed corpus of image_decode_fuzz into the directory given as argv[1]: small valid
// JPEGs (4:2:0, 4:2:2, 4:4:4, gray, CMYK, YCCK, progressive, arithmetic-coded, restart markers
// at rows and inside them, a partial progression, 1x1, transcoded) and PNGs (every colour type,
// bit depths 1 to 16, interlaced, 1x1), made by the tests' encoders.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "stoker/image/jpeg_transcode.h"
#include "stoker/testing/test_images.h"

int main(int argc, char** argv) {
  using namespace stoker::image;
  using testing::JpegSpec;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds;
  // Odd sizes: partial MCUs at the right and bottom edges.
  auto jpeg = [&](const std::string& name, JpegSpec spec, int width = 35, int height = 29) {
    spec.width = width;
    spec.height = height;
    seeds.emplace_back(name + ".jpg", testing::encode_jpeg(spec));
  };
  JpegSpec spec;
  jpeg("420", spec);
  spec.restart_rows = 1;
  jpeg("420_restart", spec);
  // Restart intervals inside rows (two MCUs: 32 px), as the transcode writes wide images.
  spec = JpegSpec();
  spec.restart_mcus = 2;
  jpeg("420_restart_in_rows", spec, 125, 45);  // 8 MCUs to a row
  spec.restart_mcus = 0;
  jpeg("420_wide", spec, 160, 33);  // transcoded: intervals of 5 MCUs
  spec = JpegSpec();
  spec.v_sampling = 1;
  jpeg("422", spec);
  spec.h_sampling = 1;
  jpeg("444", spec);
  spec = JpegSpec();
  spec.components = 1;
  jpeg("gray", spec);
  spec = JpegSpec();
  spec.components = 4;
  jpeg("cmyk", spec);
  spec.ycck = true;
  jpeg("ycck", spec);
  spec = JpegSpec();
  spec.progressive = true;
  jpeg("progressive", spec);
  spec = JpegSpec();
  spec.arithmetic = true;
  jpeg("arithmetic", spec);
  spec = JpegSpec();
  spec.partial_scans = true;
  jpeg("partial_scans", spec);
  jpeg("1x1", JpegSpec(), 1, 1);
  const std::vector<uint8_t>& original = seeds.front().second;
  stoker::Result<std::vector<uint8_t>> transcoded =
      transcode_jpeg_for_crops({original.data(), original.size()});
  if (!transcoded.is_ok()) {
    std::fprintf(stderr, "%s\n", transcoded.status().message().c_str());
    return 1;
  }
  seeds.emplace_back("420_transcoded.jpg", transcoded.value());
  const int png_specs[][3] = {{0, 1, 0},  {0, 8, 0}, {0, 16, 0}, {2, 8, 0},  {2, 16, 0},
                              {3, 4, 0},  {3, 8, 1}, {4, 8, 0},  {4, 16, 0}, {6, 8, 0},
                              {6, 16, 1}, {2, 8, 1}, {0, 16, 1}};
  for (const auto& p : png_specs) {
    seeds.emplace_back("png_" + std::to_string(p[0]) + "_" + std::to_string(p[1]) +
                           (p[2] ? "_interlaced" : "") + ".png",
                       testing::encode_png({21, 13, p[0], p[1], p[2] != 0}));
  }
  seeds.emplace_back("png_1x1.png", testing::encode_png({1, 1}));
  for (const auto& [name, bytes] : seeds) {
    if (bytes.empty()) {
      std::fprintf(stderr, "the encoder refused %s\n", name.c_str());
      return 1;
    }
    std::ofstream(std::string(argv[1]) + "/" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  return 0;
}
