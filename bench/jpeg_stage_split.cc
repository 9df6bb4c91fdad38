// Where libjpeg's time goes, without its symbols (Debian's libjpeg-turbo is stripped): each JPEG
// under DIR, transcoded as the import stores it (transcode_jpeg_for_crops), is decoded whole
// four ways, each stopping one stage later, and the differences are the stages:
//   coefficients  jpeg_read_coefficients: entropy (Huffman) decoding only;
//   raw           jpeg_read_raw_data: + inverse DCT (each component at its own resolution);
//   no colour     output in the JPEG's own colour space: + upsampling (fancy, as PIL's);
//   RGB           decode_rgb's settings: + colour conversion.
// Thread CPU time, the four in turn per image, `--repeat` rounds; prints ms per image for each
// stage and its share of the RGB decode.
//
//   build/bench/jpeg_stage_split DIR [--repeat 3]
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>  // after the two above, which it needs
// clang-format on
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "stoker/image/jpeg_transcode.h"

namespace {

double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

enum Stage { kCoefficients, kRaw, kNoColour, kRgb, kStages };
const char* const kNames[kStages] = {"Huffman decode (coefficients)", "+ inverse DCT (raw)",
                                     "+ upsampling (own colour space)", "+ colour conversion (RGB)"};

// Decodes `jpeg` up to `stage`; the files come from the import, so libjpeg's default
// error_exit (which exits) is acceptable here.
void decode(const std::vector<uint8_t>& jpeg, Stage stage, std::vector<uint8_t>& memory) {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, jpeg.data(), jpeg.size());
  jpeg_read_header(&cinfo, TRUE);
  if (stage == kCoefficients) {
    jpeg_read_coefficients(&cinfo);
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return;
  }
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  if (stage == kRgb) {
    cinfo.out_color_space = cinfo.num_components == 4 ? JCS_CMYK : JCS_RGB;
  } else {
    cinfo.out_color_space = cinfo.jpeg_color_space;
  }
  cinfo.raw_data_out = stage == kRaw;
  jpeg_start_decompress(&cinfo);
  if (stage == kRaw) {
    // One iMCU row per call: each component's v_samp_factor * 8 rows of its blocks' width.
    std::vector<std::vector<JSAMPROW>> rows(cinfo.num_components);
    std::vector<JSAMPARRAY> planes(cinfo.num_components);
    size_t offset = 0;
    for (int c = 0; c < cinfo.num_components; ++c) {
      offset += cinfo.comp_info[c].width_in_blocks * DCTSIZE * cinfo.comp_info[c].v_samp_factor *
                DCTSIZE;
    }
    memory.resize(offset);
    offset = 0;
    for (int c = 0; c < cinfo.num_components; ++c) {
      const jpeg_component_info& comp = cinfo.comp_info[c];
      for (int r = 0; r < comp.v_samp_factor * DCTSIZE; ++r) {
        rows[c].push_back(memory.data() + offset);
        offset += comp.width_in_blocks * DCTSIZE;
      }
      planes[c] = rows[c].data();
    }
    const JDIMENSION step = cinfo.max_v_samp_factor * DCTSIZE;
    while (cinfo.output_scanline < cinfo.output_height)
      jpeg_read_raw_data(&cinfo, planes.data(), step);
  } else {
    const size_t row = size_t{cinfo.output_width} * cinfo.output_components;
    memory.resize(row * cinfo.output_height);
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW at = memory.data() + row * cinfo.output_scanline;
      jpeg_read_scanlines(&cinfo, &at, 1);
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--repeat N]\n", argv[0]);
    return 2;
  }
  int repeat = 3;
  if (argc == 4 && std::strcmp(argv[2], "--repeat") == 0) repeat = std::atoi(argv[3]);
  std::vector<std::vector<uint8_t>> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    if (bytes.size() < 3 || bytes[0] != 0xFF || bytes[1] != 0xD8) continue;  // JPEGs only
    auto stored = stoker::image::transcode_jpeg_for_crops({bytes.data(), bytes.size()});
    files.push_back(stored.is_ok() ? std::move(stored.value()) : std::move(bytes));
  }
  if (files.empty()) {
    std::fprintf(stderr, "no JPEG under %s\n", argv[1]);
    return 1;
  }
  double seconds[kStages] = {};
  std::vector<uint8_t> memory;
  for (int round = 0; round < repeat; ++round) {
    for (const std::vector<uint8_t>& jpeg : files) {
      for (int s = 0; s < kStages; ++s) {
        const double t0 = thread_seconds();
        decode(jpeg, static_cast<Stage>(s), memory);
        seconds[s] += thread_seconds() - t0;
      }
    }
  }
  const double images = static_cast<double>(files.size()) * repeat;
  std::printf("%zu JPEGs (as stored), %d rounds, whole-image decodes, CPU ms per image:\n",
              files.size(), repeat);
  double before = 0;
  for (int s = 0; s < kStages; ++s) {
    const double stage = (seconds[s] - before) / images * 1e3;
    std::printf("  %-36s %7.3f ms  %5.1f%%   (cumulative %.3f ms)\n", kNames[s], stage,
                100 * (seconds[s] - before) / seconds[kRgb], seconds[s] / images * 1e3);
    before = seconds[s];
  }
  return 0;
}
