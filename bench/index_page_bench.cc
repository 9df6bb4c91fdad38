// The time parse_http_index_page takes over pages a careless parser would take quadratic time
// over: N links, and one link of N "&#"s. Google Benchmark's fitted complexity should read
// O(N) (or N log N: the names are sorted); object_store_test.cc checks what these pages list.
#include <benchmark/benchmark.h>

#include <string>

#include "stoker/net/object_store.h"

namespace stoker::bench {
namespace {

std::string links_page(int64_t n) {
  std::string page;
  for (int64_t i = 0; i < n; ++i) page += "<a href=\"f" + std::to_string(i) + ".tar\">";
  return page;
}

std::string ampersands_page(int64_t n) {
  std::string page = "<a href=\"";
  for (int64_t i = 0; i < n; ++i) page += "&#";
  return page + ".tar\">";
}

void BM_IndexPage(benchmark::State& state, std::string (*page_of)(int64_t)) {
  const remote::RemoteUrl folder = remote::parse_remote_url("http://h/data").value_or_throw();
  const std::string page = page_of(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(remote::parse_http_index_page(page, folder, "w"));
  state.SetComplexityN(state.range(0));
}
BENCHMARK_CAPTURE(BM_IndexPage, links, links_page)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 18)
    ->Complexity()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_IndexPage, ampersands, ampersands_page)
    ->RangeMultiplier(4)
    ->Range(1 << 12, 1 << 22)
    ->Complexity()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stoker::bench

BENCHMARK_MAIN();
