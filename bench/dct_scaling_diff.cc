// How far the fast mode (DCT scaling) moves pixels from torchvision's, on a folder of images:
// for each JPEG (and PNG, which never scales) under DIR, the training transform's geometry
// (RandomResizedCrop(224): four crops per image, drawn as stoker draws them) and the evaluation
// transform's (Resize(256) + CenterCrop(224), the decoded rectangle widened by the filter's
// reach as image_transforms does), each resampled to 224 x 224 uint8 from an exact decode
// (which is torchvision's pixels byte for byte: image_resample_test, pipeline_engine_test) and
// from a decode at the reduced scale the fast mode would use. Prints the mean absolute
// difference in grey levels over all pixels, the worst image's mean and the worst pixel, for
// each transform, and how many samples decoded at a reduced scale.
//
//   build/bench/dct_scaling_diff DIR
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "stoker/image/crop_sampler.h"
#include "stoker/image/decode.h"
#include "stoker/image/resample.h"

namespace {

using namespace stoker;
using namespace stoker::image;

constexpr int kSize = 224;

struct Tally {
  double sum = 0;  // of |difference| over all channel values
  long values = 0;
  double worst_image = 0;  // the largest per-sample mean
  int worst_pixel = 0;
  int samples = 0, scaled = 0;
};

// `rect` of the image decoded (exactly, or as the fast mode would), `box` resampled to 224.
std::vector<uint8_t> sample(ByteSpan bytes, const CropRect& rect, const PixelBox& box, bool fast,
                            int* scale) {
  static DecodeBuffer buffer;
  static Resampler resampler(ResampleKernel::kSimd);
  DecodeRequest request;
  request.crop = rect;
  if (fast) {
    request.min_width = static_cast<int>(std::ceil(kSize * rect.width / (box.x1 - box.x0)));
    request.min_height = static_cast<int>(std::ceil(kSize * rect.height / (box.y1 - box.y0)));
  }
  const DecodedCrop d = decode_rgb(bytes, request, buffer).value_or_throw();
  *scale = d.scale_num;
  ResampleOutput out;
  out.width = out.height = kSize;
  out.type = ResampleOutput::Type::kUint8;
  std::vector<uint8_t> pixels(3 * kSize * kSize);
  throw_if_error(resampler.resample(d.pixels, map_into(d.box, rect, box), out, pixels.data()));
  return pixels;
}

void compare(ByteSpan bytes, const CropRect& rect, const PixelBox& box, Tally& t) {
  int scale = 8;
  const std::vector<uint8_t> exact = sample(bytes, rect, box, false, &scale);
  const std::vector<uint8_t> fast = sample(bytes, rect, box, true, &scale);
  double sum = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const int d = std::abs(int{exact[i]} - int{fast[i]});
    sum += d;
    t.worst_pixel = std::max(t.worst_pixel, d);
  }
  t.sum += sum;
  t.values += static_cast<long>(exact.size());
  t.worst_image = std::max(t.worst_image, sum / static_cast<double>(exact.size()));
  ++t.samples;
  t.scaled += scale != 8;
}

void print(const char* name, const Tally& t) {
  std::printf("| %s | %d | %d | %.3f | %.2f | %d |\n", name, t.samples, t.scaled,
              t.sum / std::max(1L, t.values), t.worst_image, t.worst_pixel);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  Tally train, eval;
  for (size_t f = 0; f < files.size(); ++f) {
    std::ifstream in(files[f], std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    const ByteSpan span{bytes.data(), bytes.size()};
    Result<ImageHeader> header = read_image_header(span);
    if (!header.is_ok()) continue;
    const int w = header.value().width, h = header.value().height;
    CounterRng rng(7, f);
    for (int k = 0; k < 4; ++k) {
      const CropRect c = random_resized_crop(w, h, {}, rng).value_or_throw();
      compare(span, c, {0.0 + c.x, 0.0 + c.y, 0.0 + c.x + c.width, 0.0 + c.y + c.height}, train);
    }
    const ResizedCenterCrop cc = resize_center_crop(w, h, 256, kSize, kSize).value_or_throw();
    const double sx = std::max(1.0, (cc.box.x1 - cc.box.x0) / kSize) + 1;
    const double sy = std::max(1.0, (cc.box.y1 - cc.box.y0) / kSize) + 1;
    const int x0 = std::max(0, static_cast<int>(std::floor(cc.box.x0 - sx)));
    const int y0 = std::max(0, static_cast<int>(std::floor(cc.box.y0 - sy)));
    const int x1 = std::min(w, static_cast<int>(std::ceil(cc.box.x1 + sx)));
    const int y1 = std::min(h, static_cast<int>(std::ceil(cc.box.y1 + sy)));
    compare(span, {x0, y0, x1 - x0, y1 - y0}, cc.box, eval);
  }
  std::printf(
      "| transform | samples | decoded at a reduced scale | mean abs. difference "
      "(grey levels) | worst sample's mean | worst value |\n|---|---:|---:|---:|---:|---:|\n");
  print("RandomResizedCrop(224)", train);
  print("Resize(256) + CenterCrop(224)", eval);
  return 0;
}
