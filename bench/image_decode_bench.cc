// JPEG decode for RandomResizedCrop-sized crops: what crop decoding, the import-time transcode
// (baseline, optimised Huffman tables, a restart marker every MCU row) and DCT scaling buy. One
// thread. Photos: bench/decode_photos.py (four mate-backgrounds photos at 500x375 and
// 1200x900, quality 90, baseline and progressive), written to a temporary directory at start.
//
// Arg 0 of every benchmark picks the photo set: 0 small baseline, 1 small progressive, 2 large
// baseline, 3 large progressive. Items are images decoded.
#include <benchmark/benchmark.h>
#include <stdlib.h>

// clang-format off
#include <cstdio>  // before jpeglib.h
#include <jpeglib.h>
// clang-format on

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/image/jpeg_transcode.h"

namespace stoker::bench {
namespace {

using image::CropRect;
using image::DecodeBuffer;
using image::DecodeRequest;

constexpr int kPhotos = 4;
constexpr int kCropsPerPhoto = 8;
constexpr double kCropArea = 0.6;  // a typical RandomResizedCrop draw: mean of U(0.08, 1) ~ 0.54
constexpr int kOutputSize = 224;   // RandomResizedCrop(224): the minimum for a DCT-scaled decode

struct Photo {
  std::vector<uint8_t> original;
  std::vector<uint8_t> transcoded;
  std::vector<CropRect> crops;
  int width = 0;
  int height = 0;
};

struct PhotoSet {
  std::vector<Photo> photos;
  int64_t original_bytes = 0;
  int64_t transcoded_bytes = 0;
};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Crops of kCropArea of the image, aspect ratio log-uniform in [3/4, 4/3], anywhere.
std::vector<CropRect> crops_for(int width, int height, std::mt19937& rng) {
  std::vector<CropRect> crops;
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4), std::log(4.0 / 3));
  while (static_cast<int>(crops.size()) < kCropsPerPhoto) {
    const double area = kCropArea * width * height, ratio = std::exp(log_ratio(rng));
    const int w = static_cast<int>(std::round(std::sqrt(area * ratio)));
    const int h = static_cast<int>(std::round(std::sqrt(area / ratio)));
    if (w > width || h > height) continue;
    crops.push_back({std::uniform_int_distribution<int>(0, width - w)(rng),
                     std::uniform_int_distribution<int>(0, height - h)(rng), w, h});
  }
  return crops;
}

std::vector<PhotoSet> load_photo_sets() {
  std::string pattern = (std::filesystem::temp_directory_path() / "stoker-bench-XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  const std::string command = STOKER_PYTHON " " STOKER_BENCH_DIR "/decode_photos.py " + dir;
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "image_decode_bench: '%s' failed\n", command.c_str());
    std::exit(2);
  }
  std::vector<PhotoSet> sets(4);
  std::mt19937 rng(42);
  for (int s = 0; s < 4; ++s) {
    for (int n = 0; n < kPhotos; ++n) {
      const std::string name = std::string(s < 2 ? "small_" : "large_") + std::to_string(n) +
                               (s % 2 ? "_progressive" : "") + ".jpg";
      Photo photo;
      photo.original = read_file(dir + "/" + name);
      Result<std::vector<uint8_t>> t =
          image::transcode_jpeg_for_crops({photo.original.data(), photo.original.size()});
      Result<image::ImageHeader> h =
          image::read_image_header({photo.original.data(), photo.original.size()});
      if (!t.is_ok() || !h.is_ok()) {
        std::fprintf(stderr, "image_decode_bench: %s: %s\n", name.c_str(),
                     (t.is_ok() ? h.status() : t.status()).message().c_str());
        std::exit(2);
      }
      photo.transcoded = std::move(t).value();
      photo.width = h.value().width;
      photo.height = h.value().height;
      photo.crops = crops_for(photo.width, photo.height, rng);
      sets[s].original_bytes += static_cast<int64_t>(photo.original.size());
      sets[s].transcoded_bytes += static_cast<int64_t>(photo.transcoded.size());
      sets[s].photos.push_back(std::move(photo));
    }
  }
  std::filesystem::remove_all(dir);
  return sets;
}

const PhotoSet& photo_set(int which) {
  static const std::vector<PhotoSet> sets = load_photo_sets();
  return sets[which];
}

enum class Source { kOriginal, kTranscoded };

// Decodes every photo of the set once per crop; request_for(crop, width, height) makes the
// request.
template <typename MakeRequest>
void run(benchmark::State& state, Source source, MakeRequest request_for) {
  const PhotoSet& set = photo_set(static_cast<int>(state.range(0)));
  DecodeBuffer buffer;
  int64_t scaled = 0;
  for (auto _ : state) {
    for (const Photo& photo : set.photos) {
      const std::vector<uint8_t>& bytes =
          source == Source::kOriginal ? photo.original : photo.transcoded;
      for (const CropRect& crop : photo.crops) {
        Result<image::DecodedCrop> d = image::decode_rgb(
            {bytes.data(), bytes.size()}, request_for(crop, photo.width, photo.height), buffer);
        if (!d.is_ok()) {
          state.SkipWithError(d.status().message().c_str());
          return;
        }
        scaled += d.value().scale_num != 8;
        benchmark::DoNotOptimize(d.value().pixels.data);
      }
    }
  }
  const int64_t per_iteration = kPhotos * kCropsPerPhoto;
  state.SetItemsProcessed(state.iterations() * per_iteration);
  state.counters["scaled_frac"] =
      static_cast<double>(scaled) / static_cast<double>(state.iterations() * per_iteration);
  state.counters["bytes_ratio"] =
      static_cast<double>(set.transcoded_bytes) / static_cast<double>(set.original_bytes);
}

DecodeRequest whole(const CropRect&, int, int) { return {}; }
DecodeRequest cropped(const CropRect& c, int, int) {
  DecodeRequest r;
  r.crop = c;
  return r;
}
DecodeRequest cropped_scaled(const CropRect& c, int width, int height) {
  DecodeRequest r = cropped(c, width, height);
  r.min_width = r.min_height = kOutputSize;
  return r;
}

// Full decode, then the crop copied out: what PIL + torchvision do.
void BM_FullDecodeThenCrop(benchmark::State& state) {
  std::vector<uint8_t> out;
  const PhotoSet& set = photo_set(static_cast<int>(state.range(0)));
  DecodeBuffer buffer;
  for (auto _ : state) {
    for (const Photo& photo : set.photos) {
      for (const CropRect& c : photo.crops) {
        Result<image::DecodedCrop> d =
            image::decode_rgb({photo.original.data(), photo.original.size()}, {}, buffer);
        if (!d.is_ok()) {
          state.SkipWithError(d.status().message().c_str());
          return;
        }
        out.resize(size_t(c.width) * c.height * 3);
        for (int y = 0; y < c.height; ++y) {
          std::memcpy(out.data() + size_t(y) * c.width * 3,
                      d.value().pixels.row(c.y + y) + size_t(c.x) * 3, size_t(c.width) * 3);
        }
        benchmark::DoNotOptimize(out.data());
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * kPhotos * kCropsPerPhoto);
}
BENCHMARK(BM_FullDecodeThenCrop)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_FullDecodeOriginal(benchmark::State& state) { run(state, Source::kOriginal, whole); }
BENCHMARK(BM_FullDecodeOriginal)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_FullDecodeTranscoded(benchmark::State& state) { run(state, Source::kTranscoded, whole); }
BENCHMARK(BM_FullDecodeTranscoded)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_CropDecodeOriginal(benchmark::State& state) { run(state, Source::kOriginal, cropped); }
BENCHMARK(BM_CropDecodeOriginal)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_CropDecodeTranscoded(benchmark::State& state) { run(state, Source::kTranscoded, cropped); }
BENCHMARK(BM_CropDecodeTranscoded)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

// DCT scaling where the scaled crop still covers 224x224 (the large photos only, at 1/2).
void BM_CropDecodeTranscodedScaled(benchmark::State& state) {
  run(state, Source::kTranscoded, cropped_scaled);
}
BENCHMARK(BM_CropDecodeTranscodedScaled)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

// The bottom 30% of the rows, full width: most of the image lies above the crop, where a
// restart marker at every MCU row lets the transcode's decode start at the crop instead of
// entropy-decoding the rows above it (jpeg_skip_scanlines does).
DecodeRequest bottom_rows(const CropRect&, int width, int height) {
  DecodeRequest r;
  r.crop = CropRect{0, height - height * 3 / 10, width, height * 3 / 10};
  return r;
}
void BM_BottomRowsOriginal(benchmark::State& state) { run(state, Source::kOriginal, bottom_rows); }
BENCHMARK(BM_BottomRowsOriginal)->Arg(0)->Arg(2)->Unit(benchmark::kMicrosecond);
void BM_BottomRowsTranscoded(benchmark::State& state) {
  run(state, Source::kTranscoded, bottom_rows);
}
BENCHMARK(BM_BottomRowsTranscoded)->Arg(0)->Arg(2)->Unit(benchmark::kMicrosecond);

// A full decode of the large baseline photos at scale N/8, N = arg 0, through libjpeg directly
// (decode_rgb offers only 2/8, 4/8 and 8/8): which reduced scales are worth it. libjpeg-turbo
// 2.1.5 has SIMD inverse DCTs for 1/2 and 1/4 (and 8/8) only. Known-good data, libjpeg's default
// error handler.
void BM_FullDecodeAtScale(benchmark::State& state) {
  const PhotoSet& set = photo_set(2);
  std::vector<uint8_t> row;
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr errors;
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_decompress(&cinfo);
  int64_t pixels = 0;
  for (auto _ : state) {
    for (const Photo& photo : set.photos) {
      jpeg_mem_src(&cinfo, photo.original.data(), photo.original.size());
      jpeg_read_header(&cinfo, TRUE);
      cinfo.out_color_space = JCS_RGB;
      cinfo.scale_num = static_cast<unsigned>(state.range(0));
      cinfo.scale_denom = 8;
      jpeg_start_decompress(&cinfo);
      row.resize(size_t{cinfo.output_width} * 3);
      JSAMPROW rows[1] = {row.data()};
      while (cinfo.output_scanline < cinfo.output_height) jpeg_read_scanlines(&cinfo, rows, 1);
      pixels += int64_t{cinfo.output_width} * cinfo.output_height;
      jpeg_finish_decompress(&cinfo);
    }
  }
  jpeg_destroy_decompress(&cinfo);
  state.SetItemsProcessed(state.iterations() * kPhotos);
  state.counters["out_pixels"] =
      static_cast<double>(pixels) / static_cast<double>(state.iterations() * kPhotos);
}
BENCHMARK(BM_FullDecodeAtScale)->DenseRange(1, 8)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stoker::bench

BENCHMARK_MAIN();
