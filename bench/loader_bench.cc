// The loader's per-core gather: a shuffled epoch of a Fashion-MNIST-shaped dataset in batches of
// 256, each batch's records resolved and written by the fields' transforms
// (BatchLayout::write_samples) into one reused buffer per field, as a loader worker does (no
// checksums: the loader's default checks a record only on its first read). Arg 1: image normalised
// to float32; arg 0: copied as uint8.
#include <benchmark/benchmark.h>

#include "fashion_shaped_dataset.h"
#include "stoker/pipeline/batch_buffer.h"
#include "stoker/pipeline/batch_layout.h"

namespace stoker::bench {
namespace {

constexpr size_t kBatch = 256;

void BM_WriteSamples(benchmark::State& state) {
  FashionShapedDataset& f = fashion_shaped_dataset();
  const bool normalise = state.range(0) != 0;
  const BatchLayout layout =
      BatchLayout::create(f.dataset->schema(),
                          {{"image", normalise, {0.2860f}, {0.3530f}}, {"label"}})
          .value_or_throw();
  const auto buffer = BufferPool::create(layout, kBatch, 1, default_host_allocator())->acquire();
  std::vector<uint8_t*> dst;
  for (const auto& block : buffer->fields) dst.push_back(block.get());
  std::vector<ByteSpan> records(kBatch);
  for (auto _ : state) {
    for (size_t start = 0; start < f.order.size(); start += kBatch) {
      const size_t n = std::min<size_t>(kBatch, f.order.size() - start);
      f.dataset->resolve(f.order.data() + start, n, records.data());
      size_t failed_at = 0;
      const Status status =
          layout.write_samples(records.data(), IndexSpan{f.order.data() + start, n}, 0, n, 0, 0,
                               dst.data(), nullptr, &failed_at);
      if (!status.is_ok()) state.SkipWithError(status.message().c_str());
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_WriteSamples)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stoker::bench

BENCHMARK_MAIN();
