// Store read throughput: random-order access to every record of a Fashion-MNIST-shaped
// dataset (60000 records of image uint8[1,28,28] + label int64), with and without checksum
// verification. One thread: the figure is per core.
#include <benchmark/benchmark.h>

#include "fashion_shaped_dataset.h"

namespace stoker::bench {
namespace {

// Arg 0: plain; arg 1: the loader's way, index entries and records prefetched ahead.
void BM_RandomReadVerified(benchmark::State& state) {
  FashionShapedDataset& f = fashion_shaped_dataset();
  const bool prefetch = state.range(0) != 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < f.order.size(); ++k) {
      if (prefetch) f.dataset->prefetch_ahead(f.order.data(), f.order.size(), k);
      const int64_t i = f.order[k];
      if (!f.dataset->verify_record(i).is_ok()) state.SkipWithError("checksum");
      sum += f.dataset->fixed_field(i, 0)[100];
    }
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_RandomReadVerified)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_RandomReadUnverified(benchmark::State& state) {
  FashionShapedDataset& f = fashion_shaped_dataset();
  uint64_t sum = 0;
  for (auto _ : state) {
    for (int64_t i : f.order) sum += f.dataset->fixed_field(i, 0)[100];
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_RandomReadUnverified)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stoker::bench

BENCHMARK_MAIN();
