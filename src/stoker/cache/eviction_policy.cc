#include "stoker/cache/eviction_policy.h"

#include <algorithm>
#include <tuple>

namespace stoker {

std::optional<std::vector<size_t>> choose_victims(EvictionPolicy policy,
                                                  const std::vector<CacheEntry>& entries,
                                                  uint64_t bytes_needed,
                                                  int64_t incoming_next_use) {
  std::vector<size_t> candidates;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].pinned && !entries[i].needed_soon) candidates.push_back(i);
  }
  // Whether entry a goes before entry b.
  auto first = [&](size_t a, size_t b) {
    const CacheEntry& x = entries[a];
    const CacheEntry& y = entries[b];
    if (policy == EvictionPolicy::kLru) return std::tie(x.last_use, a) < std::tie(y.last_use, b);
    if (x.next_use != y.next_use) return x.next_use > y.next_use;
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    return a < b;
  };
  std::sort(candidates.begin(), candidates.end(), first);
  std::vector<size_t> victims;
  uint64_t freed = 0;
  for (const size_t i : candidates) {
    if (freed >= bytes_needed) break;
    if (policy == EvictionPolicy::kNextUse && entries[i].next_use <= incoming_next_use)
      return std::nullopt;
    victims.push_back(i);
    freed += entries[i].bytes;
  }
  if (freed < bytes_needed) return std::nullopt;
  return victims;
}

}  // namespace stoker
