// The cost of one trace span (TraceSpan) where tracing is off (a null Tracer) and on (the
// span recorded into the calling thread's buffer), in ns per span. The on case runs a fixed
// number of iterations below the buffer's capacity, so every span is recorded, none dropped.
#include <benchmark/benchmark.h>

#include "stoker/trace/tracer.h"

namespace stoker::bench {
namespace {

constexpr int64_t kSpans = int64_t{1} << 20;

void BM_SpanOff(benchmark::State& state) {
  Tracer* tracer = nullptr;
  benchmark::DoNotOptimize(tracer);
  for (auto _ : state) {
    TraceSpan span(tracer, "bench", "span");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_SpanOff);

void BM_SpanOn(benchmark::State& state) {
  Tracer tracer(TracerOptions{static_cast<size_t>(kSpans)});
  for (auto _ : state) {
    TraceSpan span(&tracer, "bench", "span");
    benchmark::ClobberMemory();
  }
  if (tracer.dropped() != 0) state.SkipWithError("spans were dropped");
}
BENCHMARK(BM_SpanOn)->Iterations(kSpans);

}  // namespace
}  // namespace stoker::bench

BENCHMARK_MAIN();
