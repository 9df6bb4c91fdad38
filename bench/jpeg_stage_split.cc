// Where libjpeg's time goes, without its symbols (Debian's libjpeg-turbo is stripped): each JPEG
// under DIR, transcoded as the import stores it (transcode_jpeg_for_crops), is decoded whole
// four ways, and the differences are the stages:
//   setup  jpeg_read_header + jpeg_start_decompress, then stop: markers, tables, modules;
//   skip   all rows skipped but the last iMCU row (jpeg_skip_scanlines entropy-decodes what it
//          skips and nothing else: libjpeg-turbo 2.1.5's decode_mcu(cinfo, NULL)), that row
//          read: Huffman decoding = skip - setup - the last row's share of (RGB - setup);
//   raw    jpeg_read_raw_data: + inverse DCT, each component at its own resolution;
//   RGB    decode_rgb's settings: + upsampling (fancy, as PIL's) and colour conversion, which
//          libjpeg-turbo fuses for the common cases, so they are one stage here.
// (jpeg_read_coefficients would also time the Huffman decoding, but it fills a whole-image
// coefficient array, freshly allocated and zeroed, which costs as much again.) Thread CPU time,
// the four in turn per image, `--repeat` rounds; prints ms per image per stage and its share,
// and the stored bytes. `--restart-span` transcodes with restart markers every N px or more
// instead of the import's 64 (0: none), to weigh the span's bytes against its decode time.
//
//   build/bench/jpeg_stage_split DIR [--repeat 3] [--restart-span 64]
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

enum Stage { kSetup, kSkip, kRaw, kRgb, kStages };

// Decodes `jpeg` as `stage` says; returns the share of the output rows read in full (kSkip: the
// last iMCU row's). The files come from the import, so libjpeg's default error_exit (which
// exits) is acceptable here.
double decode(const std::vector<uint8_t>& jpeg, Stage stage, std::vector<uint8_t>& memory) {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, jpeg.data(), jpeg.size());
  jpeg_read_header(&cinfo, TRUE);
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  cinfo.out_color_space = cinfo.num_components == 4 ? JCS_CMYK : JCS_RGB;
  cinfo.raw_data_out = stage == kRaw;
  jpeg_start_decompress(&cinfo);
  double read_share = 1;
  if (stage == kSetup) {
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return 0;
  }
  if (stage == kRaw) {
    // One iMCU row per call: each component's v_samp_factor * 8 rows of its blocks' width.
    std::vector<std::vector<JSAMPROW>> rows(cinfo.num_components);
    std::vector<JSAMPARRAY> planes(cinfo.num_components);
    size_t bytes = 0;
    for (int c = 0; c < cinfo.num_components; ++c) {
      const jpeg_component_info& comp = cinfo.comp_info[c];
      bytes += size_t{comp.width_in_blocks} * DCTSIZE * comp.v_samp_factor * DCTSIZE;
    }
    memory.resize(bytes);
    size_t offset = 0;
    for (int c = 0; c < cinfo.num_components; ++c) {
      const jpeg_component_info& comp = cinfo.comp_info[c];
      for (int r = 0; r < comp.v_samp_factor * DCTSIZE; ++r) {
        rows[c].push_back(memory.data() + offset);
        offset += size_t{comp.width_in_blocks} * DCTSIZE;
      }
      planes[c] = rows[c].data();
    }
    const JDIMENSION step = cinfo.max_v_samp_factor * DCTSIZE;
    while (cinfo.output_scanline < cinfo.output_height)
      jpeg_read_raw_data(&cinfo, planes.data(), step);
  } else {
    const size_t row = size_t{cinfo.output_width} * cinfo.output_components;
    memory.resize(row * cinfo.output_height);
    if (stage == kSkip) {
      const JDIMENSION imcu = cinfo.max_v_samp_factor * DCTSIZE;
      const JDIMENSION last = (cinfo.output_height - 1) / imcu * imcu;  // the last iMCU row's
      if (last > 0) jpeg_skip_scanlines(&cinfo, last);
      read_share = static_cast<double>(cinfo.output_height - last) / cinfo.output_height;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW at = memory.data() + row * cinfo.output_scanline;
      jpeg_read_scanlines(&cinfo, &at, 1);
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return read_share;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  JDIMENSION restart_span = stoker::image::kRestartSpan;
  bool usage = argc < 2 || argc % 2 != 0;
  for (int i = 2; !usage && i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeat") == 0) {
      repeat = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--restart-span") == 0) {
      restart_span = static_cast<JDIMENSION>(std::atoi(argv[i + 1]));
    } else {
      usage = true;
    }
  }
  if (usage || repeat < 1) {
    std::fprintf(stderr, "usage: %s DIR [--repeat N] [--restart-span PIXELS]\n", argv[0]);
    return 2;
  }
  std::vector<std::vector<uint8_t>> files;
  size_t stored_bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    if (bytes.size() < 3 || bytes[0] != 0xFF || bytes[1] != 0xD8) continue;  // JPEGs only
    auto stored = stoker::image::transcode_jpeg_for_crops(
        {bytes.data(), bytes.size()}, stoker::image::kDefaultMaxPixels, restart_span);
    files.push_back(stored.is_ok() ? std::move(stored.value()) : std::move(bytes));
    stored_bytes += files.back().size();
  }
  if (files.empty()) {
    std::fprintf(stderr, "no JPEG under %s\n", argv[1]);
    return 1;
  }
  double seconds[kStages] = {};
  double last_rows = 0;  // kSkip's rows read in full, as CPU seconds of an RGB decode
  std::vector<uint8_t> memory;
  for (int round = 0; round < repeat; ++round) {
    for (const std::vector<uint8_t>& jpeg : files) {
      double t[kStages], share = 0;
      for (int s = 0; s < kStages; ++s) {
        const double t0 = thread_seconds();
        const double r = decode(jpeg, static_cast<Stage>(s), memory);
        t[s] = thread_seconds() - t0;
        seconds[s] += t[s];
        if (s == kSkip) share = r;
      }
      last_rows += share * (t[kRgb] - t[kSetup]);
    }
  }
  const double images = static_cast<double>(files.size()) * repeat;
  const double huffman = seconds[kSkip] - seconds[kSetup] - last_rows;
  const double stage[] = {seconds[kSetup], huffman, seconds[kRaw] - seconds[kSetup] - huffman,
                          seconds[kRgb] - seconds[kRaw]};
  const char* const names[] = {"header + setup", "Huffman decode", "inverse DCT",
                               "upsampling + colour conversion"};
  std::printf(
      "%zu JPEGs (as stored, restart span %u px: %zu bytes), %d rounds, whole-image decodes, "
      "CPU ms per image:\n",
      files.size(), restart_span, stored_bytes, repeat);
  for (int s = 0; s < kStages; ++s) {
    std::printf("  %-32s %7.3f ms  %5.1f%%\n", names[s], stage[s] / images * 1e3,
                100 * stage[s] / seconds[kRgb]);
  }
  std::printf("  %-32s %7.3f ms\n", "whole RGB decode", seconds[kRgb] / images * 1e3);
  return 0;
}
