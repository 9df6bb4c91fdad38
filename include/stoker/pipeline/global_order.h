#pragma once
// GlobalOrder: which dataset index stands at each position of an epoch, the order a Sampler
// deals to the ranks (sampler.h; docs/DESIGN.md contracts 1-3, restated per order there). An
// order is a pure function of its input (the seed, whether to shuffle, the dataset's parts and
// shards) and the epoch: any rank, worker or process computes the same one, so a position alone
// resumes it, on any world size. The orders are registered one file each
// (src/stoker/pipeline/orders/, order_registry.h): "global", "shard_window", "mixture",
// "per_record".
// Immutable; thread-safe.

#include <cstdint>
#include <vector>

namespace stoker {

// What an order is made over. A dataset is one part, or several (a mixture's sources, their
// records one after another: part p's records follow the parts before it); each part is its
// shards' record counts, in the manifest's order; part_tokens, where known, the tokens each
// part's records hold in all (ShardSource::part_tokens: 0 where not a token source).
struct OrderInput {
  uint64_t seed = 0;
  bool shuffle = true;  // false: each order's unshuffled form (the identity for one part)
  std::vector<std::vector<int64_t>> parts;
  std::vector<int64_t> part_tokens;
};

// The shards of every part, one after another.
inline std::vector<int64_t> all_shards(const OrderInput& input) {
  std::vector<int64_t> shards;
  for (const std::vector<int64_t>& part : input.parts)
    shards.insert(shards.end(), part.begin(), part.end());
  return shards;
}

class GlobalOrder {
 public:
  virtual ~GlobalOrder() = default;
  // The positions of an epoch, N >= 1: the dataset's size, or a mixture's samples per epoch.
  virtual int64_t epoch_size() const = 0;
  // Epoch `epoch`'s order: N samples, each in [0, K x the parts' records), K =
  // samples_per_record(): sample s is occurrence s mod K of dataset index s div K (for K = 1
  // the dataset index itself). Precondition: epoch >= 0. O(N) time and memory at least;
  // the thread's cancellation in scope (util/cancel_scope.h) ends it with Error (kCancelled).
  virtual std::vector<int64_t> order(int64_t epoch) const = 0;
  // K >= 1: the samples each record gives an epoch ("per_record"; the others 1).
  virtual int64_t samples_per_record() const { return 1; }
};

}  // namespace stoker
