// The image layer's resample + fused write (image/resample.h), per core: one Resampler, one
// source, one output slot, the SIMD kernel (the best instruction set of this CPU) beside the
// scalar reference; and torch's float32 resize of a tensor (image/torch_float_resize.h, the
// `tensor_float` backend) to uint8 on the same sizes. Sizes are those of training on
// ImageNet-like photographs.
#include <benchmark/benchmark.h>
#include <hwy/targets.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/image/resample.h"
#include "stoker/image/torch_float_resize.h"
#include "stoker/util/rng.h"

namespace stoker::bench {
namespace {

struct ResampleCase {
  const char* name;
  int source_width, source_height, out_size;
  image::ResampleOutput::Type type;
};

const ResampleCase kCases[] = {
    {"crop375x500_to224_f32", 375, 500, 224, image::ResampleOutput::Type::kFloat32},
    {"crop375x500_to224_u8", 375, 500, 224, image::ResampleOutput::Type::kUint8},
    {"crop350x350_to224_f32", 350, 350, 224, image::ResampleOutput::Type::kFloat32},
    {"crop1200x900_to224_f32", 1200, 900, 224, image::ResampleOutput::Type::kFloat32},
    {"up100x80_to224_f32", 100, 80, 224, image::ResampleOutput::Type::kFloat32},
};

// Arg 0: the case; arg 1: 0 SIMD (the best build this CPU runs), 1 scalar, 2 SIMD limited to
// AVX2 (to compare it with AVX-512 where the CPU has both); arg 2: 0 bilinear, 1 bicubic.
void BM_Resample(benchmark::State& state) {
  const ResampleCase& c = kCases[state.range(0)];
  const bool scalar = state.range(1) == 1;
  if (state.range(1) == 2)
    hwy::SetSupportedTargetsForTest(HWY_AVX2 | HWY_SSE4 | HWY_SSSE3 | HWY_SCALAR);
  std::vector<uint8_t> pixels(static_cast<size_t>(c.source_width) * c.source_height * 3);
  CounterRng rng(1, 2);
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.next_u64());
  const image::RgbView src{pixels.data(), c.source_width, c.source_height, 3 * c.source_width};
  image::ResampleOutput out;
  out.width = out.height = c.out_size;
  out.type = c.type;
  out.flip_horizontal = true;
  out.filter =
      state.range(2) == 1 ? image::ResampleFilter::kBicubic : image::ResampleFilter::kBilinear;
  out.mean = {0.485f, 0.456f, 0.406f};
  out.std = {0.229f, 0.224f, 0.225f};
  std::vector<float> dst(static_cast<size_t>(3) * c.out_size * c.out_size);
  image::Resampler resampler(scalar ? image::ResampleKernel::kScalar
                                    : image::ResampleKernel::kSimd);
  const image::PixelBox box{0, 0, static_cast<double>(c.source_width),
                            static_cast<double>(c.source_height)};
  for (auto _ : state) {
    if (!resampler.resample(src, box, out, reinterpret_cast<uint8_t*>(dst.data())).is_ok())
      state.SkipWithError("resample failed");
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(c.name) + " " + resampler.kernel_name() +
                 (state.range(2) == 1 ? " bicubic" : ""));
  hwy::SetSupportedTargetsForTest(0);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Resample)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// The same cases through torch's float32 kernel and its rounding to uint8 (no flip, no
// normalisation: torchvision v1 resizes a uint8 tensor so); arg 1: 0 bilinear, 1 bicubic.
void BM_TorchFloatResize(benchmark::State& state) {
  const ResampleCase& c = kCases[state.range(0)];
  std::vector<uint8_t> pixels(static_cast<size_t>(c.source_width) * c.source_height * 3);
  CounterRng rng(1, 2);
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.next_u64());
  const image::RgbView src{pixels.data(), c.source_width, c.source_height, 3 * c.source_width};
  const auto filter =
      state.range(1) == 1 ? image::ResampleFilter::kBicubic : image::ResampleFilter::kBilinear;
  const image::ResampleWindow window{0, 0, c.out_size, c.out_size};
  std::vector<float> values;
  std::vector<uint8_t> out;
  for (auto _ : state) {
    if (!image::torch_float_resize(src, 0, 0, c.source_width, c.source_height, c.out_size,
                                   c.out_size, window, filter, values)
             .is_ok())
      state.SkipWithError("resize failed");
    image::round_to_uint8(values, filter, out);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(c.name) + " torch float" + (state.range(1) == 1 ? " bicubic" : ""));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TorchFloatResize)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stoker::bench

BENCHMARK_MAIN();
