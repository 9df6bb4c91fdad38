// Store read throughput: random-order access to every record of a Fashion-MNIST-shaped
// dataset (60000 records of image uint8[1,28,28] + label int64), with and without checksum
// verification. One thread: the figure is per core.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "stoker/store/dataset.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr int64_t kRecords = 60000;

struct Fixture {
  testing::TempDir dir;
  std::shared_ptr<const Dataset> dataset;
  std::vector<int64_t> order;

  Fixture() {
    Schema schema =
        Schema::create({{"image", DType::kUint8, {1, 28, 28}}, {"label", DType::kInt64, {}}})
            .value_or_throw();
    std::mt19937_64 rng(1);
    std::vector<std::vector<uint8_t>> records;
    for (int64_t i = 0; i < kRecords; ++i) records.push_back(testing::random_record(schema, rng));
    testing::write_dataset(dir / "ds", schema, records);
    dataset = Dataset::open(dir / "ds").value_or_throw();
    order.resize(kRecords);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// Arg 0: plain; arg 1: the loader's way, index entries and records prefetched ahead.
void BM_RandomReadVerified(benchmark::State& state) {
  Fixture& f = fixture();
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
  Fixture& f = fixture();
  uint64_t sum = 0;
  for (auto _ : state) {
    for (int64_t i : f.order) sum += f.dataset->fixed_field(i, 0)[100];
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_RandomReadUnverified)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stoker

BENCHMARK_MAIN();
