// "mixture": the parts (a mixture's sources) mixed by weight. Each epoch of N positions holds
// exactly c_p samples of part p (N's largest-remainder apportionment by the weights), the parts'
// samples interleaved by a seeded shuffle (unshuffled: spread evenly); each part runs through its
// own epochs at its own pace, in its own shuffled order, so every sample of a part comes once
// before any comes twice. docs/DESIGN.md contract 13 states it.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "stoker/pipeline/order_registry.h"
#include "stoker/util/permutation.h"
#include "stoker/util/rng.h"

namespace stoker::orders {
namespace {

class Mixture : public GlobalOrder {
 public:
  // counts[p]: part p's samples per epoch; sizes[p]: its records.
  Mixture(std::vector<int64_t> sizes, std::vector<int64_t> counts, uint64_t seed, bool shuffle)
      : sizes_(std::move(sizes)),
        counts_(std::move(counts)),
        size_(std::accumulate(counts_.begin(), counts_.end(), int64_t{0})),
        seed_(seed),
        shuffle_(shuffle) {}

  int64_t epoch_size() const override { return size_; }

  std::vector<int64_t> order(int64_t epoch) const override {
    // Which part each position takes: c_p of part p, shuffled; without shuffle spread evenly,
    // position i to the part furthest behind its share, (i + 1) c_p / N - taken_p (ties: the
    // lower part), which ends with exactly c_p each.
    std::vector<int64_t> parts(static_cast<size_t>(size_));
    if (shuffle_) {
      std::vector<int64_t> blocks;
      for (size_t p = 0; p < counts_.size(); ++p) blocks.insert(blocks.end(), counts_[p], p);
      const std::vector<int64_t> at = fisher_yates(size_, seed_, mixture_stream(epoch));
      for (size_t i = 0; i < parts.size(); ++i) parts[i] = blocks[at[i]];
    } else {
      std::vector<int64_t> given(counts_.size(), 0);
      for (size_t i = 0; i < parts.size(); ++i) {
        size_t best = 0;
        __int128 most = 0;
        for (size_t p = 0; p < counts_.size(); ++p) {
          const __int128 behind =
              static_cast<__int128>(i + 1) * counts_[p] - static_cast<__int128>(given[p]) * size_;
          if (p == 0 || behind > most) {
            best = p;
            most = behind;
          }
        }
        parts[i] = static_cast<int64_t>(best);
        ++given[best];
      }
    }
    // The k-th of part p is its sample j = epoch * c_p + k: record j mod n_p of the part's
    // epoch j div n_p (mod 2^64 as a stream), offset by the parts before it.
    std::vector<int64_t> offset(sizes_.size(), 0), taken(sizes_.size(), 0),
        part_epoch(sizes_.size(), 0);
    for (size_t p = 1; p < sizes_.size(); ++p) offset[p] = offset[p - 1] + sizes_[p - 1];
    std::vector<std::vector<int64_t>> part_order(sizes_.size());
    std::vector<int64_t> order(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t p = parts[i];
      const __int128 j = static_cast<__int128>(epoch) * counts_[p] + taken[p]++;
      const auto e = static_cast<int64_t>(static_cast<uint64_t>(j / sizes_[p]));
      if (part_order[p].empty() || e != part_epoch[p]) {
        part_epoch[p] = e;
        part_order[p] = shuffle_ ? fisher_yates(sizes_[p], seed_, part_order_stream(p, e))
                                 : identity_order(sizes_[p]);
      }
      order[i] = offset[p] + part_order[p][static_cast<size_t>(j % sizes_[p])];
    }
    return order;
  }

 private:
  std::vector<int64_t> sizes_;
  std::vector<int64_t> counts_;
  int64_t size_;
  uint64_t seed_;
  bool shuffle_;
};

// N's largest-remainder apportionment by `shares` (summing to 1): floor(N * share) each, the
// rest one each to the largest remainders, ties to the lower part.
std::vector<int64_t> apportioned(int64_t n, const std::vector<double>& shares) {
  std::vector<int64_t> counts(shares.size());
  std::vector<double> remainders(shares.size());
  int64_t left = n;
  for (size_t p = 0; p < shares.size(); ++p) {
    const double exact = static_cast<double>(n) * shares[p];
    counts[p] = static_cast<int64_t>(std::floor(exact));
    remainders[p] = exact - static_cast<double>(counts[p]);
    left -= counts[p];
  }
  std::vector<size_t> by_remainder(shares.size());
  std::iota(by_remainder.begin(), by_remainder.end(), size_t{0});
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [&](size_t a, size_t b) { return remainders[a] > remainders[b]; });
  for (size_t i = 0; left > 0; ++i, --left) ++counts[by_remainder[i % by_remainder.size()]];
  return counts;
}

Result<std::shared_ptr<const GlobalOrder>> make_mixture(const OrderInput& input,
                                                        const Params& params) {
  const std::vector<double>& weights = params.reals("weights");
  if (weights.size() != input.parts.size())
    return invalid_argument(fmt::format("order 'mixture': {} weights for {} sources",
                                        weights.size(), input.parts.size()));
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int64_t> sizes;
  std::vector<double> shares;
  for (size_t p = 0; p < input.parts.size(); ++p) {
    sizes.push_back(std::accumulate(input.parts[p].begin(), input.parts[p].end(), int64_t{0}));
    if (sizes.back() <= 0)
      return invalid_argument(fmt::format("order 'mixture': source {} has no records", p));
    shares.push_back(weights[p] / total);
  }
  // The epoch: as given, or until the first source is spent (each part's records over its
  // share, the least), or every source (the most).
  int64_t n = params.integer("samples_per_epoch");
  if (n == 0) {
    const bool first = params.choice("until") == "first";
    double bound = first ? INFINITY : 0;
    for (size_t p = 0; p < sizes.size(); ++p) {
      const double spent = static_cast<double>(sizes[p]) / shares[p];
      bound = first ? std::min(bound, std::floor(spent)) : std::max(bound, std::ceil(spent));
    }
    if (!(bound <= 1099511627776.0))
      return invalid_argument("order 'mixture': an epoch of more than 2^40 samples");
    n = std::max<int64_t>(1, static_cast<int64_t>(bound));
  }
  return std::shared_ptr<const GlobalOrder>(std::make_shared<Mixture>(
      std::move(sizes), apportioned(n, shares), input.seed, input.shuffle));
}

}  // namespace

OrderSpec mixture() {
  OrderSpec spec;
  spec.name = "mixture";
  spec.doc =
      "sources mixed by weight: each epoch exactly its share of each, interleaved; each source "
      "through its own epochs";
  spec.params = {
      ParamSpec::reals("weights", {1.0}, "each source's share (any positive numbers, normalised)",
                       1, ParamSpec::kAnyCount)
          .above(0),
      ParamSpec::integer("samples_per_epoch", 0,
                         "samples per epoch; 0: until the first (or every) source is spent")
          .in(0, 1099511627776.0),  // 2^40
      ParamSpec::choice("until", "first", {"first", "all"},
                        "without samples_per_epoch, the epoch ends when the first source is "
                        "spent, or when all are (the others cycling through their epochs)"),
  };
  spec.make = make_mixture;
  return spec;
}

}  // namespace stoker::orders
