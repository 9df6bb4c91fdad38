// The color_jitter operation (pipeline/ops/color_jitter.cc) per image, one core: a random RGB
// uint8 image [3, 224, 224] restored then jittered each iteration (the restore, a 150 KB copy,
// is in the time), a new sample (so new factors and order) each time. Arg: the adjustment on,
// amount 0.4 (hue 0.1), or 4: all four. bench/color_jitter_compare.py runs it beside
// torchvision's ColorJitter.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/util/rng.h"

namespace stoker::bench {
namespace {

const char* const kAdjustments[] = {"brightness", "contrast", "saturation", "hue"};

void BM_ColorJitter(benchmark::State& state) {
  const int64_t which = state.range(0);
  std::vector<std::pair<std::string, ParamValue>> given;
  for (int64_t a = 0; a < 4; ++a) {
    if (which == a || which == 4) given.emplace_back(kAdjustments[a], a == 3 ? 0.1 : 0.4);
  }
  const std::vector<int64_t> shape = {3, 224, 224};
  const OpCall call = make_op_call("color_jitter", given).value();
  const std::shared_ptr<const PixelOp> op =
      call.op->make_pixel(call.params, {"image", shape}).value();
  std::vector<uint8_t> image(3 * 224 * 224);
  CounterRng rng(1, 2);
  for (uint8_t& p : image) p = static_cast<uint8_t>(rng.next_u64());
  std::vector<uint8_t> pixels(image.size());
  SampleInput input;
  input.step = 1;
  for (auto _ : state) {
    pixels = image;
    if (!op->apply(input, pixels.data()).is_ok()) state.SkipWithError("apply failed");
    ++input.index;
    benchmark::ClobberMemory();
  }
  state.SetLabel(which == 4 ? "all" : kAdjustments[which]);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ColorJitter)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stoker::bench

BENCHMARK_MAIN();
