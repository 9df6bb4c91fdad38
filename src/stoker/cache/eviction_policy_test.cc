// Eviction (eviction_policy.h): hand-checked choices of both policies, then properties over
// random caches.
#include "stoker/cache/eviction_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "stoker/store/shard_schedule.h"

namespace stoker {
namespace {

using Victims = std::optional<std::vector<size_t>>;

Victims victims(std::vector<size_t> indices) { return indices; }

CacheEntry entry(uint64_t bytes, int64_t next_use, int64_t last_use, bool pinned = false,
                 bool needed_soon = false) {
  return CacheEntry{bytes, next_use, last_use, pinned, needed_soon};
}

// 0: needed at 50, 1 at 500, 2 at 200, 3 at 1000 but pinned, 4 at 900 but the next batches'.
const std::vector<CacheEntry> kCache = {entry(100, 50, 5), entry(100, 500, 1), entry(100, 200, 3),
                                        entry(100, 1000, 0, true), entry(100, 900, 0, false, true)};

TEST(EvictionPolicyTest, NextUseEvictsTheFarthestNeededLaterThanTheIncomingShard) {
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, kCache, 150, 10), victims({1, 2}));
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, kCache, 100, 300), victims({1}));
  // Room for the shard needed at 300 would cost the one needed at 200: it waits.
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, kCache, 150, 300), std::nullopt);
  // Needed at 500 exactly is not later: never evicted for it.
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, kCache, 1, 500), std::nullopt);
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, kCache, 300, 0), victims({1, 2, 0}));
  // Pinned and protected shards never go, whatever their next use: 300 bytes are evictable.
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, kCache, 301, 0), std::nullopt);
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, kCache, 0, 10), victims({}));
}

TEST(EvictionPolicyTest, NextUseTakesNeverUsedFirstThenTheLargerOfATie) {
  const std::vector<CacheEntry> cache = {entry(10, 70, 0), entry(30, 70, 0), entry(20, 70, 0),
                                         entry(5, ShardSchedule::kNever, 9)};
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, cache, 6, 0), victims({3, 1}));
  EXPECT_EQ(choose_victims(EvictionPolicy::kNextUse, cache, 40, 0), victims({3, 1, 2}));
}

TEST(EvictionPolicyTest, LruEvictsTheLeastRecentlyUsedWhateverComesNext) {
  EXPECT_EQ(choose_victims(EvictionPolicy::kLru, kCache, 150, 10), victims({1, 2}));
  EXPECT_EQ(choose_victims(EvictionPolicy::kLru, kCache, 150, 300), victims({1, 2}));
  EXPECT_EQ(choose_victims(EvictionPolicy::kLru, kCache, 250, 600), victims({1, 2, 0}));
  EXPECT_EQ(choose_victims(EvictionPolicy::kLru, kCache, 301, 0), std::nullopt);
  const std::vector<CacheEntry> tie = {entry(10, 0, 4), entry(10, 0, 4)};
  EXPECT_EQ(choose_victims(EvictionPolicy::kLru, tie, 10, 0), victims({0}));
}

TEST(EvictionPolicyTest, ChoicesKeepTheirRulesOnRandomCaches) {
  std::mt19937_64 random(42);
  for (int round = 0; round < 2000; ++round) {
    std::vector<CacheEntry> cache(random() % 12);
    for (CacheEntry& e : cache) {
      e = entry(1 + random() % 100, static_cast<int64_t>(random() % 50),
                static_cast<int64_t>(random() % 50), random() % 5 == 0, random() % 5 == 0);
    }
    const uint64_t needed = random() % 400;
    const auto incoming = static_cast<int64_t>(random() % 50);
    for (EvictionPolicy policy : {EvictionPolicy::kNextUse, EvictionPolicy::kLru}) {
      SCOPED_TRACE(::testing::Message()
                   << "round " << round << " " << kEvictionPolicyNames.name(policy));
      // What may go: never pinned or protected; with next-use only what is needed later.
      uint64_t evictable = 0;
      for (const CacheEntry& e : cache) {
        const bool later = policy == EvictionPolicy::kLru || e.next_use > incoming;
        if (!e.pinned && !e.needed_soon && later) evictable += e.bytes;
      }
      const Victims chosen_ones = choose_victims(policy, cache, needed, incoming);
      ASSERT_EQ(chosen_ones.has_value(), evictable >= needed) << evictable << " " << needed;
      if (!chosen_ones) continue;
      uint64_t freed = 0;
      std::vector<bool> chosen(cache.size(), false);
      for (const size_t i : *chosen_ones) {
        ASSERT_LT(i, cache.size());
        ASSERT_FALSE(chosen[i]);
        chosen[i] = true;
        EXPECT_FALSE(cache[i].pinned || cache[i].needed_soon);
        if (policy == EvictionPolicy::kNextUse) {
          EXPECT_GT(cache[i].next_use, incoming);
        }
        freed += cache[i].bytes;
      }
      EXPECT_GE(freed, needed);
      if (!chosen_ones->empty()) {  // no more than needed
        EXPECT_LT(freed - cache[chosen_ones->back()].bytes, needed);
      }
      // Nothing kept that the policy ranks before a victim.
      for (size_t k = 0; k < cache.size(); ++k) {
        if (chosen[k] || cache[k].pinned || cache[k].needed_soon) continue;
        for (const size_t i : *chosen_ones) {
          if (policy == EvictionPolicy::kNextUse) {
            EXPECT_LE(cache[k].next_use, cache[i].next_use);
          } else {
            EXPECT_GE(cache[k].last_use, cache[i].last_use);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace stoker
