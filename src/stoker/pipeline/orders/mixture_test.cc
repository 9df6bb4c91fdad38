#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "stoker/pipeline/order_registry.h"
#include "stoker/pipeline/sampler.h"

namespace stoker {
namespace {

// Parts of `sizes` records, each in shards of at most 7 records.
OrderInput parts_of(const std::vector<int64_t>& sizes, uint64_t seed = 3, bool shuffle = true) {
  OrderInput input;
  input.seed = seed;
  input.shuffle = shuffle;
  for (int64_t size : sizes) {
    std::vector<int64_t> shards;
    for (int64_t left = size; left > 0; left -= 7) shards.push_back(std::min<int64_t>(left, 7));
    input.parts.push_back(shards);
  }
  return input;
}

std::shared_ptr<const GlobalOrder> mixture(const OrderInput& input,
                                           std::vector<std::pair<std::string, ParamValue>> given) {
  return make_order("mixture", input, given).value_or_throw();
}

// The part a dataset index is of, for parts of `sizes` records.
int64_t part_of(int64_t index, const std::vector<int64_t>& sizes) {
  int64_t p = 0;
  for (int64_t end = sizes[0]; index >= end; end += sizes[++p]) {
  }
  return p;
}

TEST(MixtureOrder, EachEpochHoldsExactlyEachSourcesShareInterleaved) {
  const std::vector<int64_t> sizes = {30, 100, 12};
  // Until the first is spent: 30 / 0.6 = 50, 100 / 0.3 = 333, 12 / 0.1 = 120; N = 50.
  const auto order = mixture(parts_of(sizes), {{"weights", std::vector<double>{6, 3, 1}}});
  ASSERT_EQ(order->epoch_size(), 50);
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    const std::vector<int64_t> o = order->order(epoch);
    std::vector<int64_t> counts(3, 0);
    for (int64_t index : o) ++counts[part_of(index, sizes)];
    EXPECT_EQ(counts, (std::vector<int64_t>{30, 15, 5})) << epoch;
    // Interleaved: the first sixth of the epoch is not one source's.
    std::vector<int64_t> head(3, 0);
    for (size_t i = 0; i < 12; ++i) ++head[part_of(o[i], sizes)];
    EXPECT_LT(*std::max_element(head.begin(), head.end()), 12) << epoch;
  }
}

TEST(MixtureOrder, EverySampleOfASourceComesOnceBeforeAnyComesTwice) {
  const std::vector<int64_t> sizes = {9, 40};
  // 9 records at weight 1, 40 at 1: N = 18, 9 of each; the larger one spans epochs.
  const auto order = mixture(parts_of(sizes), {{"weights", std::vector<double>{1, 1}}});
  std::map<int64_t, std::vector<int64_t>> drawn;  // by part, across epochs, in order
  for (int64_t epoch = 0; epoch < 9; ++epoch)
    for (int64_t index : order->order(epoch)) drawn[part_of(index, sizes)].push_back(index);
  for (const auto& [part, indices] : drawn) {
    const int64_t size = sizes[part], offset = part == 0 ? 0 : sizes[0];
    for (size_t block = 0; block + size <= indices.size(); block += size) {
      std::vector<int64_t> got(indices.begin() + block, indices.begin() + block + size);
      std::sort(got.begin(), got.end());
      std::vector<int64_t> all(size);
      std::iota(all.begin(), all.end(), offset);
      EXPECT_EQ(got, all) << "part " << part << ", its epoch " << block / size;
    }
    // Each of the source's epochs shuffled its own way.
    EXPECT_NE(std::vector<int64_t>(indices.begin(), indices.begin() + size),
              std::vector<int64_t>(indices.begin() + size, indices.begin() + 2 * size));
  }
}

TEST(MixtureOrder, APureFunctionOfSeedAndEpoch) {
  const std::vector<int64_t> sizes = {20, 20};
  const auto a = mixture(parts_of(sizes, 3), {{"weights", std::vector<double>{1, 3}}});
  const auto again = mixture(parts_of(sizes, 3), {{"weights", std::vector<double>{1, 3}}});
  const auto other = mixture(parts_of(sizes, 4), {{"weights", std::vector<double>{1, 3}}});
  EXPECT_EQ(a->order(5), again->order(5));
  EXPECT_NE(a->order(5), a->order(6));
  EXPECT_NE(a->order(5), other->order(5));
}

TEST(MixtureOrder, UntilAllSpendsEverySourceAndTheCountIsTheirs) {
  const std::vector<int64_t> sizes = {30, 100};
  const auto all = mixture(parts_of(sizes),
                           {{"weights", std::vector<double>{1, 1}}, {"until", std::string("all")}});
  EXPECT_EQ(all->epoch_size(), 200);  // 100 / 0.5
  const auto fixed = mixture(parts_of(sizes), {{"weights", std::vector<double>{1, 2}},
                                               {"samples_per_epoch", int64_t{10}}});
  ASSERT_EQ(fixed->epoch_size(), 10);
  std::vector<int64_t> counts(2, 0);
  for (int64_t index : fixed->order(0)) ++counts[part_of(index, sizes)];
  EXPECT_EQ(counts, (std::vector<int64_t>{3, 7}));  // 3.33 and 6.67: the larger remainder
}

TEST(MixtureOrder, UnshuffledTheSourcesAreSpreadEvenlyEachInItsOrder) {
  const std::vector<int64_t> sizes = {4, 6};
  const auto order = mixture(parts_of(sizes, 3, false), {{"weights", std::vector<double>{1, 1}}});
  EXPECT_EQ(order->order(0), (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(order->order(1), (std::vector<int64_t>{0, 8, 1, 9, 2, 4, 3, 5}));
  // 2:1 over 9: a a b a a b ..., never two of b together.
  const auto thirds =
      mixture(parts_of({6, 30}, 3, false), {{"weights", std::vector<double>{2, 1}}});
  ASSERT_EQ(thirds->epoch_size(), 9);
  std::vector<int64_t> parts;
  for (int64_t index : thirds->order(0)) parts.push_back(index < 6 ? 0 : 1);
  EXPECT_EQ(parts, (std::vector<int64_t>{0, 1, 0, 0, 1, 0, 0, 1, 0}));
}

TEST(MixtureOrder, RanksShareAnEpochExactlyOnceAndResumeOnAnotherWorldSize) {
  const std::vector<int64_t> sizes = {25, 60};
  const auto order = mixture(parts_of(sizes), {{"weights", std::vector<double>{2, 1}}});
  const std::vector<int64_t> global = order->order(2);
  for (int world : {1, 3, 4}) {
    std::vector<int64_t> dealt;
    for (int rank = 0; rank < world; ++rank) {
      SamplerOptions options;
      options.rank = rank;
      options.world_size = world;
      options.batch_size = 2;
      options.last_batch = LastBatch::kDrop;
      const EpochPlan plan = Sampler(order, options).plan(2, 6);
      for (int64_t b = 0; b < plan.num_batches(); ++b)
        for (int64_t index : plan.batch(b)) dealt.push_back(index);
    }
    // From position 6 (saved on any world size), whole rounds of world x 2 positions.
    const int64_t taken = (order->epoch_size() - 6) / (2 * world) * (2 * world);
    std::vector<int64_t> expected(global.begin() + 6, global.begin() + 6 + taken);
    std::sort(dealt.begin(), dealt.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(dealt, expected) << world;
  }
}

TEST(MixtureOrder, WeightsThatDoNotFitTheSourcesAreOneLine) {
  const auto refused = [](const OrderInput& input,
                          std::vector<std::pair<std::string, ParamValue>> given) {
    return make_order("mixture", input, given).status().message();
  };
  EXPECT_EQ(refused(parts_of({5, 5}), {{"weights", std::vector<double>{1, 2, 3}}}),
            "order 'mixture': 3 weights for 2 sources");
  EXPECT_EQ(refused(parts_of({5, 0}), {{"weights", std::vector<double>{1, 1}}}),
            "order 'mixture': source 1 has no records");
  EXPECT_NE(refused(parts_of({5, 5}), {{"weights", std::vector<double>{1, 0}}})
                .find("order 'mixture': weights must be"),
            std::string::npos);
}

}  // namespace
}  // namespace stoker
