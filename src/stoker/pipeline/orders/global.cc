// "global": the Fisher-Yates shuffle of the whole dataset (sampler.h), or the identity.

#include <numeric>

#include "stoker/pipeline/order_registry.h"
#include "stoker/util/permutation.h"
#include "stoker/util/rng.h"

namespace stoker::orders {
namespace {

class GlobalShuffle : public GlobalOrder {
 public:
  GlobalShuffle(int64_t size, uint64_t seed, bool shuffle)
      : size_(size), seed_(seed), shuffle_(shuffle) {}
  int64_t epoch_size() const override { return size_; }
  std::vector<int64_t> order(int64_t epoch) const override {
    if (shuffle_) return fisher_yates(size_, seed_, order_stream(epoch));
    return identity_order(size_);
  }

 private:
  int64_t size_;
  uint64_t seed_;
  bool shuffle_;
};

}  // namespace

OrderSpec global() {
  OrderSpec spec;
  spec.name = "global";
  spec.doc = "the whole dataset shuffled each epoch (Fisher-Yates), or in order";
  spec.make = [](const OrderInput& input,
                 const Params&) -> Result<std::shared_ptr<const GlobalOrder>> {
    const std::vector<int64_t> shards = all_shards(input);
    const int64_t size = std::accumulate(shards.begin(), shards.end(), int64_t{0});
    if (size <= 0) return invalid_argument("order 'global': the dataset has no records");
    return std::shared_ptr<const GlobalOrder>(
        std::make_shared<GlobalShuffle>(size, input.seed, input.shuffle));
  };
  return spec;
}

}  // namespace stoker::orders
