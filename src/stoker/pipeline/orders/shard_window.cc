// "shard_window": the shard-window shuffle (sampler.h; docs/REMOTE-DESIGN.md section 2), which
// reads about `window` shards at a time; the identity without shuffle.

#include <numeric>

#include "stoker/pipeline/order_registry.h"
#include "stoker/pipeline/shard_window_order.h"
#include "stoker/util/permutation.h"

namespace stoker::orders {
namespace {

class ShardWindow : public GlobalOrder {
 public:
  ShardWindow(std::vector<int64_t> shards, uint64_t seed, bool shuffle, int64_t window)
      : shards_(std::move(shards)),
        size_(std::accumulate(shards_.begin(), shards_.end(), int64_t{0})),
        seed_(seed),
        shuffle_(shuffle),
        window_(window) {}
  int64_t epoch_size() const override { return size_; }
  std::vector<int64_t> order(int64_t epoch) const override {
    if (shuffle_) return shard_window_order(seed_, epoch, window_, shards_);
    return identity_order(size_);
  }

 private:
  std::vector<int64_t> shards_;
  int64_t size_;
  uint64_t seed_;
  bool shuffle_;
  int64_t window_;
};

}  // namespace

OrderSpec shard_window() {
  OrderSpec spec;
  spec.name = "shard_window";
  spec.doc = "about `window` shards read at a time, their records shuffled among them";
  spec.params = {ParamSpec::integer("window", 1, "shards read at a time").at_least(1)};
  spec.make = [](const OrderInput& input,
                 const Params& params) -> Result<std::shared_ptr<const GlobalOrder>> {
    std::vector<int64_t> shards = all_shards(input);
    if (std::accumulate(shards.begin(), shards.end(), int64_t{0}) <= 0)
      return invalid_argument("order 'shard_window': the dataset has no records");
    return std::shared_ptr<const GlobalOrder>(std::make_shared<ShardWindow>(
        std::move(shards), input.seed, input.shuffle, params.integer("window")));
  };
  return spec;
}

}  // namespace stoker::orders
