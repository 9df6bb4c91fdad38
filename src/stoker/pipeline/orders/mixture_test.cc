#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

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

// Each part's samples over `epochs` epochs of `order`: every block of a part's size in its
// stream is all its records (once before twice), and its first two blocks differ.
void expect_once_before_twice(const GlobalOrder& order, const std::vector<int64_t>& sizes,
                              int64_t epochs) {
  std::map<int64_t, std::vector<int64_t>> drawn;  // by part, across epochs, in order
  for (int64_t epoch = 0; epoch < epochs; ++epoch)
    for (int64_t index : order.order(epoch)) drawn[part_of(index, sizes)].push_back(index);
  for (const auto& [part, indices] : drawn) {
    const int64_t size = sizes[part];
    const int64_t offset = std::accumulate(sizes.begin(), sizes.begin() + part, int64_t{0});
    ASSERT_GE(indices.size(), 2 * size) << part;
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

TEST(MixtureOrder, EverySampleOfASourceComesOnceBeforeAnyComesTwice) {
  // 9 records at weight 1, 40 at 1: N = 18, 9 of each; the larger one spans epochs.
  const auto order = mixture(parts_of({9, 40}), {{"weights", std::vector<double>{1, 1}}});
  expect_once_before_twice(*order, {9, 40}, 9);
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

// Epoch `epoch` of `order` from position `start` (saved on any world size) dealt to 1, 3 and 4
// ranks: together whole rounds of world x 2 positions of the epoch's order, each once.
void expect_ranks_share(const std::shared_ptr<const GlobalOrder>& order, int64_t epoch,
                        int64_t start) {
  const std::vector<int64_t> global = order->order(epoch);
  for (int world : {1, 3, 4}) {
    std::vector<int64_t> dealt;
    for (int rank = 0; rank < world; ++rank) {
      SamplerOptions options;
      options.rank = rank;
      options.world_size = world;
      options.batch_size = 2;
      options.last_batch = LastBatch::kDrop;
      const EpochPlan plan = Sampler(order, options).plan(epoch, start);
      for (int64_t b = 0; b < plan.num_batches(); ++b)
        for (int64_t index : plan.batch(b)) dealt.push_back(index);
    }
    const int64_t taken = (order->epoch_size() - start) / (2 * world) * (2 * world);
    std::vector<int64_t> expected(global.begin() + start, global.begin() + start + taken);
    std::sort(dealt.begin(), dealt.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(dealt, expected) << world;
  }
}

TEST(MixtureOrder, RanksShareAnEpochExactlyOnceAndResumeOnAnotherWorldSize) {
  expect_ranks_share(mixture(parts_of({25, 60}), {{"weights", std::vector<double>{2, 1}}}), 2, 6);
}

// Weights {1, 1}, then {3, 1} from sample 30, then {1, 3} from 70, over epochs of 20.
std::vector<std::pair<std::string, ParamValue>> scheduled() {
  return {{"weights", std::vector<double>{1, 1}},
          {"samples_per_epoch", int64_t{20}},
          {"change_at", std::vector<double>{30, 70}},
          {"later_weights", std::vector<double>{3, 1, 1, 3}}};
}

TEST(MixtureSchedule, EachPieceOfAnEpochHoldsExactlyItsSegmentsShare) {
  const std::vector<int64_t> sizes = {13, 50};
  for (bool shuffle : {true, false}) {
    const auto order = mixture(parts_of(sizes, 3, shuffle), scheduled());
    std::vector<int64_t> run;  // each sample's part, over the run
    for (int64_t epoch = 0; epoch < 6; ++epoch)
      for (int64_t index : order->order(epoch)) run.push_back(part_of(index, sizes));
    // (from, to, counts): a piece per segment and epoch; 10 at 3:1 is 7.5 and 2.5, the tie to
    // the lower part; that half sample carried into the epoch's next piece (1:3 at 70: 2.5 - 0.5
    // and 7.5 + 0.5).
    const std::vector<std::tuple<int64_t, int64_t, std::vector<int64_t>>> pieces = {
        {0, 20, {10, 10}}, {20, 30, {5, 5}}, {30, 40, {8, 2}},   {40, 60, {15, 5}},
        {60, 70, {8, 2}},  {70, 80, {2, 8}}, {80, 100, {5, 15}}, {100, 120, {5, 15}}};
    for (const auto& [from, to, counts] : pieces) {
      std::vector<int64_t> got(2, 0);
      for (int64_t g = from; g < to; ++g) ++got[run[g]];
      EXPECT_EQ(got, counts) << from << " to " << to << (shuffle ? "" : ", unshuffled");
    }
  }
}

TEST(MixtureSchedule, ASourceUnderASampleAPieceGetsItsShareOverTheEpoch) {
  // A ramp changing every 16 samples, the small source's share of each piece under half a
  // sample: carried from piece to piece it comes to its share (each piece apart: none at all).
  std::vector<double> change_at, later;
  double exact = 16.0 / 41.0;  // the first piece's, at 40:1
  for (int step = 1; step < 200; ++step) {
    change_at.push_back(16.0 * step);
    later.insert(later.end(), {40.0 - step / 20, 1.0});
    exact += 16.0 / (41.0 - step / 20);
  }
  const std::vector<int64_t> sizes = {4000, 1000};
  for (bool shuffle : {true, false}) {
    const auto order =
        mixture(parts_of(sizes, 3, shuffle), {{"weights", std::vector<double>{40, 1}},
                                              {"samples_per_epoch", int64_t{3200}},
                                              {"change_at", change_at},
                                              {"later_weights", later}});
    int64_t small = 0;
    for (int64_t index : order->order(0)) small += part_of(index, sizes);
    EXPECT_NEAR(static_cast<double>(small), exact, 1.0) << (shuffle ? "" : "unshuffled");
  }
}

TEST(MixtureSchedule, EachSourceContinuesItsOwnEpochsAcrossChanges) {
  // Changes mid-epoch and at an epoch's start, over sources whose epochs span several.
  auto given = scheduled();
  given[2].second = std::vector<double>{7, 20, 33, 61};
  given[3].second = std::vector<double>{1, 4, 5, 1, 1, 1, 2, 7};
  // Each epoch made on its own: where each source is comes from the closed form.
  expect_once_before_twice(*mixture(parts_of({9, 23}), given), {9, 23}, 12);
}

TEST(MixtureSchedule, WithoutAChangeInAnEpochItIsTheMixtureOfThoseWeights) {
  const auto order = mixture(parts_of({13, 50}), scheduled());
  auto later = scheduled();
  later.resize(2);
  later[0].second = std::vector<double>{1, 3};
  // Epoch 4 (samples 80 to 100) lies in the last segment: as a mixture of {1, 3} from the start,
  // but for where each source is in its own epochs.
  std::vector<int64_t> parts, plain;
  for (int64_t index : order->order(4)) parts.push_back(part_of(index, {13, 50}));
  for (int64_t index : mixture(parts_of({13, 50}), later)->order(4))
    plain.push_back(part_of(index, {13, 50}));
  EXPECT_EQ(parts, plain);
}

TEST(MixtureSchedule, RanksShareAPieceAndResumeMidSegmentOnAnotherWorldSize) {
  const auto order = mixture(parts_of({13, 50}), scheduled());
  expect_ranks_share(order, 1, 4);   // sample 24: before the change at 30
  expect_ranks_share(order, 1, 13);  // sample 33: after it
  expect_ranks_share(order, 3, 7);   // sample 67: a later segment's, across the next change
}

TEST(MixtureSchedule, SharesOfTokensWeighEachSourceByItsTokensPerSample) {
  OrderInput input = parts_of({20, 100});
  input.part_tokens = {20 * 8, 100 * 2};  // 8 and 2 tokens a sample
  const auto order = make_order("mixture", input,
                                {{"weights", std::vector<double>{1, 1}},
                                 {"samples_per_epoch", int64_t{50}},
                                 {"share_of", std::string("tokens")}})
                         .value_or_throw();
  std::vector<int64_t> counts(2, 0);
  for (int64_t index : order->order(0)) ++counts[part_of(index, {20, 100})];
  EXPECT_EQ(counts, (std::vector<int64_t>{10, 40}));  // 80 tokens each
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
  const auto with = [](std::vector<double> at, std::vector<double> later) {
    std::vector<std::pair<std::string, ParamValue>> given = {
        {"weights", std::vector<double>{1, 1}}, {"change_at", at}, {"later_weights", later}};
    return given;
  };
  EXPECT_EQ(refused(parts_of({5, 5}), with({8, 8}, {1, 2, 2, 1})),
            "order 'mixture': change_at[1] = 8 is not a whole sample after the one before (8)");
  EXPECT_EQ(refused(parts_of({5, 5}), with({0}, {1, 2})),
            "order 'mixture': change_at[0] = 0 is not a whole sample after the one before (0)");
  EXPECT_EQ(refused(parts_of({5, 5}), with({8, 9}, {1, 2, 2})),
            "order 'mixture': later_weights holds 3 weights, not 4 (2 changes x 2 sources)");
  EXPECT_NE(refused(parts_of({5, 5}), with({8}, {1, NAN})).find("later_weights"),
            std::string::npos);
  EXPECT_EQ(refused(parts_of({5, 5}),
                    {{"share_of", std::string("tokens")}, {"weights", std::vector<double>{1, 1}}}),
            "order 'mixture': share_of=tokens, but source 0 is not a token source");
}

// An epoch's order is made whole (32 bytes a sample at most while it is made): one that would
// not fit in memory is refused when the order is made, naming what made it so long, not left
// to fail allocating (std::bad_alloc) or be killed for memory at the epoch's start.
TEST(MixtureOrder, AnEpochTooLongToOrderInMemoryIsOneLine) {
  const auto refused = [](std::vector<std::pair<std::string, ParamValue>> given) {
    return make_order("mixture", parts_of({1000, 1000}), given).status().message();
  };
  const std::string given =
      refused({{"weights", std::vector<double>{1, 1}}, {"samples_per_epoch", int64_t{1} << 40}});
  EXPECT_EQ(given.rfind("order 'mixture': an epoch of 1099511627776 samples (samples_per_epoch) "
                        "takes ",
                        0),
            0u)
      << given;
  EXPECT_NE(given.find("of memory"), std::string::npos) << given;
  EXPECT_EQ(given.find('\n'), std::string::npos);
  // Weights this uneven make the epoch until every source is spent about 10^12 samples long.
  const std::string uneven =
      refused({{"weights", std::vector<double>{1, 1e-9}}, {"until", std::string("all")}});
  EXPECT_EQ(uneven.rfind("order 'mixture': an epoch of 1000000001001 samples (until=all, by the "
                         "weights) takes ",
                         0),
            0u)
      << uneven;
  EXPECT_TRUE(
      make_order("mixture", parts_of({1000, 1000}),
                 {{"weights", std::vector<double>{1, 1}}, {"samples_per_epoch", int64_t{1} << 20}})
          .is_ok());
}

}  // namespace
}  // namespace stoker
