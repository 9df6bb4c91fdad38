// What a cache of half a remote dataset downloads, epoch by epoch, under the loader's real order
// (the shard-window shuffle, sampler.h), its schedule (pipeline/schedule_from_order.h) and the
// eviction policy (remote/eviction_policy.h): next-use beside LRU, for several seeds and windows
// (docs/REMOTE-DESIGN.md section 6; issue 36's target: next-use within 1.05x the floor in epochs
// 2-4). A simulation, not a timing: no shard is read, only bytes counted.
//
// The model: S shards of unequal record counts (80% to 120% of the mean) and bytes proportional
// to them; W ranks of batch B read the global order a step (W * B positions) at a time. At each
// step the shards live at that position are pinned and those the next K steps read are
// protected (K = 4: the engine's window and two); every shard the step reads must be cached (a
// demand fetch); then the cache prefetches, in the order of next use, the shards first needed
// within a horizon of D average shards (--prefetch-shards, 4), while the policy finds room:
// next-use evicting the farthest next use (never one needed sooner than the incoming shard),
// LRU the least recently read. A shard counts as downloaded in the epoch in which it is
// fetched. The floor of an epoch after the first is the dataset less the cache: what no policy
// can avoid.
//
//   build/bench/cache_simulation [--shards S] [--records-per-shard R] [--epochs E]
//                                [--prefetch-shards D]
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "stoker/cache/eviction_policy.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/pipeline/schedule_from_order.h"
#include "stoker/pipeline/shard_window_order.h"
#include "stoker/util/rng.h"

namespace {

using namespace stoker;

constexpr int64_t kRanks = 8;
constexpr int64_t kBatch = 32;
constexpr int64_t kStep = kRanks * kBatch;
constexpr int64_t kLookaheadSteps = 4;
constexpr uint64_t kBytesPerRecord = 110 * 1024;  // an ImageNet JPEG

struct Dataset {
  std::vector<int64_t> records;  // per shard
  std::vector<int64_t> starts;   // first index per shard, then N
  std::vector<int> shard_of;     // per dataset index
  std::vector<uint64_t> bytes;   // per shard
  uint64_t total_bytes = 0;
};

Dataset make_dataset(int64_t shards, int64_t mean_records) {
  Dataset d;
  CounterRng rng(2024, 0);
  d.starts.push_back(0);
  for (int64_t s = 0; s < shards; ++s) {
    const int64_t c =
        mean_records * 4 / 5 + static_cast<int64_t>(rng.uniform_below(mean_records * 2 / 5 + 1));
    d.records.push_back(c);
    d.starts.push_back(d.starts.back() + c);
    d.bytes.push_back(static_cast<uint64_t>(c) * kBytesPerRecord);
    d.total_bytes += d.bytes.back();
    d.shard_of.insert(d.shard_of.end(), c, static_cast<int>(s));
  }
  return d;
}

// A run of `epochs` epochs: bytes downloaded in each.
std::vector<uint64_t> simulate(const Dataset& d, EvictionPolicy policy, uint64_t seed,
                               int64_t window, int epochs, uint64_t budget, int64_t horizon) {
  SamplerOptions options;
  options.seed = seed;
  options.shuffle_window = window;
  const Sampler sampler(d.records, options);
  const auto shards = static_cast<int>(d.records.size());
  const auto n = static_cast<int64_t>(d.shard_of.size());
  std::map<int, int64_t> cached;  // shard -> last read (global clock)
  uint64_t used = 0;
  std::vector<uint64_t> downloaded(static_cast<size_t>(epochs), 0);
  std::vector<int64_t> order = sampler.order(0);
  for (int e = 0; e < epochs; ++e) {
    std::vector<int64_t> next = sampler.order(e + 1);
    const ShardSchedule schedule = schedule_from_order(e, order, next, d.starts);
    for (int64_t p = 0; p < n; p += kStep) {
      const int64_t clock = e * n + p;
      std::vector<bool> read_now(shards, false), soon(shards, false);
      for (int64_t q = p; q < std::min(n, p + kLookaheadSteps * kStep); ++q) {
        soon[d.shard_of[order[q]]] = true;
        if (q < p + kStep) read_now[d.shard_of[order[q]]] = true;
      }
      // Admits `shard` (next used at `next_use`) if the policy finds room; demand fetches go
      // over the budget rather than stall (counted all the same; the budget holds M + K here).
      auto admit = [&](int shard, int64_t next_use, bool demand) {
        std::vector<int> ids;
        std::vector<CacheEntry> entries;
        for (const auto& [id, last_read] : cached) {
          const ShardUse& use = schedule.now[id];
          CacheEntry entry;
          entry.bytes = d.bytes[id];
          entry.next_use = schedule.next_use(id, p);
          entry.last_use = last_read;
          entry.pinned = use.first <= p && p <= use.last;
          entry.needed_soon = soon[id];
          ids.push_back(id);
          entries.push_back(entry);
        }
        const uint64_t free = budget > used ? budget - used : 0;
        const uint64_t needed = d.bytes[shard] > free ? d.bytes[shard] - free : 0;
        const auto victims = choose_victims(policy, entries, needed, next_use);
        if (!victims && !demand) return false;
        for (const size_t v : victims.value_or(std::vector<size_t>{})) {
          used -= d.bytes[ids[v]];
          cached.erase(ids[v]);
        }
        cached[shard] = clock;
        used += d.bytes[shard];
        downloaded[e] += d.bytes[shard];
        return true;
      };
      for (int s = 0; s < shards; ++s) {
        if (read_now[s] && !cached.count(s)) admit(s, p, true);
      }
      std::vector<int> ahead;  // not cached, by next use
      for (int s = 0; s < shards; ++s) {
        if (!cached.count(s)) ahead.push_back(s);
      }
      std::sort(ahead.begin(), ahead.end(), [&](int a, int b) {
        return std::make_pair(schedule.next_use(a, p), a) <
               std::make_pair(schedule.next_use(b, p), b);
      });
      for (const int s : ahead) {
        const int64_t next_use = schedule.next_use(s, p);
        if (next_use >= p + horizon || !admit(s, next_use, false)) break;
      }
      for (int s = 0; s < shards; ++s) {
        if (read_now[s]) cached[s] = clock;
      }
    }
    order = std::move(next);
  }
  return downloaded;
}

// The value of option `name` in argv, or `fallback`.
int64_t option(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) != 0) continue;
    char* end = nullptr;
    const long long value = std::strtoll(argv[i + 1], &end, 10);
    if (*end != '\0' || value < 1 || value > 100000) {
      fmt::print(stderr, "cache_simulation: {} must be a whole number from 1 to 100000, not '{}'\n",
                 name, argv[i + 1]);
      std::exit(2);
    }
    return value;
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t shards = option(argc, argv, "--shards", 256);
  const int64_t records = option(argc, argv, "--records-per-shard", 400);
  const int epochs = static_cast<int>(option(argc, argv, "--epochs", 4));
  const int64_t horizon = option(argc, argv, "--prefetch-shards", 4) * records;
  const Dataset d = make_dataset(shards, records);
  const uint64_t budget = d.total_bytes / 2;
  const double floor = static_cast<double>(d.total_bytes - budget);
  fmt::print("{} shards, {} records, {:.1f} GB; cache {:.1f} GB; {} ranks x batch {}\n", shards,
             d.shard_of.size(), d.total_bytes / 1e9, budget / 1e9, kRanks, kBatch);
  fmt::print("downloads: epoch 1 over the dataset, epochs 2-{} over the floor (dataset - cache)\n",
             epochs);
  fmt::print("{:<9} {:>6} {:>5} {:>4} {:>7}", "policy", "window", "M", "seed", "epoch 1");
  for (int e = 2; e <= epochs; ++e) fmt::print(" {:>7}", fmt::format("epoch {}", e));
  fmt::print(" {:>8}\n", fmt::format("2-{}", epochs));
  for (const int64_t window : {4, 16, 64}) {
    for (const uint64_t seed : {1, 2, 3}) {
      for (const EvictionPolicy policy : {EvictionPolicy::kNextUse, EvictionPolicy::kLru}) {
        const std::vector<uint64_t> got =
            simulate(d, policy, seed, window, epochs, budget, horizon);
        fmt::print("{:<9} {:>6} {:>5} {:>4} {:>7.3f}", kEvictionPolicyNames.name(policy), window,
                   live_shard_bound(window, d.records), seed,
                   got[0] / static_cast<double>(d.total_bytes));
        for (int e = 1; e < epochs; ++e) fmt::print(" {:>7.3f}", got[e] / floor);
        const uint64_t later = std::accumulate(got.begin() + 1, got.end(), uint64_t{0});
        fmt::print(" {:>8.3f}\n", later / (floor * (epochs - 1)));
      }
    }
  }
}
