// The shard-window shuffle (sampler.h, shard_window_order.h) against its definition, and its
// properties: a permutation, a pure function of its inputs, the live-shard bound; and "all" is
// the global Fisher-Yates order, byte for byte.
#include "stoker/pipeline/shard_window_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

#include "stoker/pipeline/sampler.h"
#include "stoker/pipeline/schedule_from_order.h"
#include "stoker/util/rng.h"

namespace stoker {
namespace {

using Order = std::vector<int64_t>;
using Counts = std::vector<int64_t>;

// Shard layouts: equal, unequal, one shard, empty shards, one much larger shard.
const std::vector<Counts> kLayouts = {{10, 10, 10, 10, 10, 10, 10, 10},
                                      {3, 17, 1, 9, 30, 4, 12},
                                      {50},
                                      {0, 5, 0, 7, 3, 0},
                                      {2, 2, 200, 2, 2, 2}};

int64_t total(const Counts& counts) {
  return std::accumulate(counts.begin(), counts.end(), int64_t{0});
}

std::vector<int64_t> starts_of(const Counts& counts) {
  std::vector<int64_t> starts(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), starts.begin() + 1);
  return starts;
}

// The order the way sampler.h defines it, step by step, with a plain sort on 128-bit keys.
Order defined_order(uint64_t seed, int64_t epoch, int64_t window, const Counts& counts) {
  const auto shards = static_cast<int64_t>(counts.size());
  const int64_t n = total(counts);
  std::vector<int64_t> pi(counts.size());
  std::iota(pi.begin(), pi.end(), int64_t{0});
  CounterRng rng(seed, shard_order_stream(epoch));
  for (int64_t i = shards - 1; i >= 1; --i) std::swap(pi[i], pi[rng.uniform_below(i + 1)]);
  std::vector<int64_t> concatenated_start(counts.size());
  for (int64_t j = 0, c = 0; j < shards; c += counts[pi[j]], ++j) concatenated_start[pi[j]] = c;
  const int64_t w = std::min(window, shards);
  const int64_t span = (w * n + shards - 1) / shards;
  using u128 = unsigned __int128;
  std::vector<std::tuple<u128, int64_t>> keyed;
  const std::vector<int64_t> starts = starts_of(counts);
  for (int64_t s = 0; s < shards; ++s) {
    for (int64_t i = starts[s]; i < starts[s + 1]; ++i) {
      const u128 r = random_at(seed, window_stream(epoch), static_cast<uint64_t>(i));
      keyed.emplace_back((static_cast<u128>(concatenated_start[s]) << 20) +
                             ((r * static_cast<u128>(span) << 20) >> 64),
                         i);
    }
  }
  std::sort(keyed.begin(), keyed.end());
  Order order;
  for (const auto& [key, i] : keyed) order.push_back(i);
  return order;
}

// The global Fisher-Yates order as the loader made it before shuffle windows existed.
Order fisher_yates(uint64_t seed, int64_t epoch, int64_t n) {
  Order order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  CounterRng rng(seed, order_stream(epoch));
  for (int64_t i = n - 1; i >= 1; --i) std::swap(order[i], order[rng.uniform_below(i + 1)]);
  return order;
}

// Epoch `epoch`'s order from a Sampler over `counts` with `window` (kShuffleAll: all).
Order sampler_order(const Counts& counts, uint64_t seed, int64_t epoch, int64_t window) {
  SamplerOptions options;
  options.seed = seed;
  options.shuffle_window = window;
  return Sampler(counts, options).order(epoch);
}

TEST(ShardWindowOrderTest, IsTheDocumentedDefinition) {
  for (const Counts& counts : kLayouts) {
    for (int64_t window : {1, 2, 3, 5, 100}) {
      for (uint64_t seed : {0, 7}) {
        SCOPED_TRACE(::testing::Message() << "S=" << counts.size() << " w=" << window);
        EXPECT_EQ(shard_window_order(seed, 3, window, counts),
                  defined_order(seed, 3, window, counts));
      }
    }
  }
}

TEST(ShardWindowOrderTest, IsAPermutationOfTheDataset) {
  for (const Counts& counts : kLayouts) {
    Order identity(static_cast<size_t>(total(counts)));
    std::iota(identity.begin(), identity.end(), int64_t{0});
    for (int64_t window : {1, 2, 4, 7, 1000}) {
      for (int64_t epoch : {0, 1, 9}) {
        Order sorted = shard_window_order(5, epoch, window, counts);
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted, identity) << "w=" << window << " epoch=" << epoch;
      }
    }
  }
}

TEST(ShardWindowOrderTest, IsAFunctionOfSeedEpochWindowAndShardCounts) {
  const Counts counts(64, 40);
  const Order a = sampler_order(counts, 7, 3, 4);
  EXPECT_EQ(a, sampler_order(counts, 7, 3, 4));  // a fresh Sampler, the same inputs
  EXPECT_NE(a, sampler_order(counts, 7, 4, 4));  // another epoch
  EXPECT_NE(a, sampler_order(counts, 8, 3, 4));  // another seed
  EXPECT_NE(a, sampler_order(counts, 7, 3, 5));  // another window
  Counts regrouped(32, 80);                      // the same records, other shards
  EXPECT_NE(a, sampler_order(regrouped, 7, 3, 4));
  // Every epoch of a run is a different order.
  for (int64_t e = 0; e < 8; ++e) {
    for (int64_t f = e + 1; f < 8; ++f)
      EXPECT_NE(sampler_order(counts, 1, e, 4), sampler_order(counts, 1, f, 4)) << e << " " << f;
  }
}

TEST(ShardWindowOrderTest, AllIsTheGlobalFisherYatesOrderByteForByte) {
  for (const Counts& counts : kLayouts) {
    for (int64_t epoch : {0, 1, 6}) {
      EXPECT_EQ(sampler_order(counts, 11, epoch, kShuffleAll),
                fisher_yates(11, epoch, total(counts)));
    }
  }
  // Without shuffle every window is the identity.
  SamplerOptions options;
  options.shuffle = false;
  options.shuffle_window = 2;
  const Order identity = Sampler(Counts{3, 4, 5}, options).order(2);
  EXPECT_TRUE(std::is_sorted(identity.begin(), identity.end()));
}

TEST(ShardWindowOrderTest, AtMostMShardsAreLiveAtAnyPosition) {
  for (const Counts& counts : kLayouts) {
    const std::vector<int64_t> starts = starts_of(counts);
    for (int64_t window : {1, 2, 3, 5, 1000}) {
      const int64_t bound = live_shard_bound(window, counts);
      int64_t most = 0;
      for (int64_t epoch = 0; epoch < 6; ++epoch) {
        const Order order = shard_window_order(epoch, epoch, window, counts);
        const ShardSchedule schedule = schedule_from_order(epoch, order, order, starts);
        std::vector<int64_t> live(order.size() + 1, 0);  // a difference array over positions
        for (const ShardUse& use : schedule.now) {
          if (use.first == ShardUse::kUnused) continue;
          ++live[use.first];
          --live[use.last + 1];
        }
        std::partial_sum(live.begin(), live.end(), live.begin());
        most = std::max(most, *std::max_element(live.begin(), live.end()));
      }
      EXPECT_LE(most, bound) << "S=" << counts.size() << " w=" << window;
      EXPECT_GE(most, 1);
    }
  }
  // Equal shards: M = w.
  EXPECT_EQ(live_shard_bound(4, Counts(16, 100)), 4);
  EXPECT_EQ(live_shard_bound(1, Counts(16, 100)), 1);
  EXPECT_EQ(live_shard_bound(64, Counts(16, 100)), 16);  // at most every shard
  // The worked example of docs/REMOTE-DESIGN.md: L = 6, M = floor(5 / 3) + 1.
  EXPECT_EQ(shard_window_span(2, Counts(4, 3)), 6);
  EXPECT_EQ(live_shard_bound(2, Counts(4, 3)), 2);
}

TEST(ShardWindowOrderTest, WindowOneReadsTheShardsOneAfterAnother) {
  // w = 1 with equal shards: L = c, so the shards' key ranges do not overlap: each shard's
  // records are contiguous, a shard at a time.
  const Counts counts(6, 5);
  const Order order = shard_window_order(3, 0, 1, counts);
  for (size_t p = 0; p < order.size(); p += 5) {
    for (size_t k = 1; k < 5; ++k) EXPECT_EQ(order[p + k] / 5, order[p] / 5) << p;
  }
}

}  // namespace
}  // namespace stoker
