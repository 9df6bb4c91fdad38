#include "stoker/pipeline/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

#include "stoker/pipeline/order_registry.h"
#include "stoker/util/rng.h"
#include "stoker/util/status.h"

namespace stoker {
namespace {

using Batches = std::vector<std::vector<int64_t>>;

constexpr LastBatch kModes[] = {LastBatch::kShort, LastBatch::kDrop, LastBatch::kPad};

SamplerOptions make_options(uint64_t seed, int rank, int world_size, int64_t batch_size,
                            LastBatch last, bool shuffle = true) {
  SamplerOptions o;
  o.seed = seed;
  o.shuffle = shuffle;
  o.rank = rank;
  o.world_size = world_size;
  o.batch_size = batch_size;
  o.last_batch = last;
  return o;
}

Batches all_batches(const EpochPlan& plan) {
  Batches out;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const IndexSpan span = plan.batch(b);
    out.emplace_back(span.begin(), span.end());
  }
  return out;
}

// One plan per rank of a world.
std::vector<EpochPlan> world_plans(int64_t n, int world_size, int64_t batch_size, LastBatch last,
                                   int64_t epoch, int64_t start, uint64_t seed = 1) {
  std::vector<EpochPlan> plans;
  for (int r = 0; r < world_size; ++r) {
    plans.push_back(
        Sampler(n, make_options(seed, r, world_size, batch_size, last)).plan(epoch, start));
  }
  return plans;
}

// The whole global order of an epoch, read through a single rank with one big batch.
std::vector<int64_t> global_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle = true) {
  const EpochPlan plan =
      Sampler(n, make_options(seed, 0, 1, n, LastBatch::kShort, shuffle)).plan(epoch);
  EXPECT_EQ(plan.num_batches(), 1);
  const IndexSpan span = plan.batch(0);
  return std::vector<int64_t>(span.begin(), span.end());
}

// Samples each rank is dealt from `remaining` positions (sampler.h), computed the plain way.
int64_t expected_per_rank(int64_t remaining, int w, int64_t batch, LastBatch last) {
  switch (last) {
    case LastBatch::kDrop:
      return remaining / (w * batch) * batch;
    case LastBatch::kPad:
      return (remaining + w * batch - 1) / (w * batch) * batch;
    case LastBatch::kShort:
      break;
  }
  return (remaining + w - 1) / w;
}

// Adds one to counts[i] for every index i in batches [first, last) of every plan.
void count_batches(const std::vector<EpochPlan>& plans, int64_t first, int64_t last,
                   std::vector<int64_t>& counts) {
  for (const EpochPlan& plan : plans) {
    for (int64_t b = first; b < last; ++b) {
      for (int64_t i : plan.batch(b)) {
        ASSERT_GE(i, 0);
        ASSERT_LT(i, static_cast<int64_t>(counts.size()));
        ++counts[i];
      }
    }
  }
}

TEST(SamplerTest, GlobalOrderIsTheDocumentedFisherYates) {
  for (int64_t n : {1, 2, 10, 257}) {
    std::vector<int64_t> expected(n);
    std::iota(expected.begin(), expected.end(), int64_t{0});
    CounterRng rng(99, order_stream(4));
    for (int64_t i = n - 1; i >= 1; --i) {
      std::swap(expected[i], expected[rng.uniform_below(static_cast<uint64_t>(i) + 1)]);
    }
    EXPECT_EQ(global_order(n, 99, 4), expected) << n;
  }
}

TEST(SamplerTest, OrderDependsOnSeedAndEpochOnly) {
  const std::vector<int64_t> a = global_order(1000, 7, 3);
  EXPECT_EQ(a, global_order(1000, 7, 3));  // a fresh Sampler, same (seed, epoch)
  EXPECT_NE(a, global_order(1000, 7, 4));  // another epoch
  EXPECT_NE(a, global_order(1000, 8, 3));  // another seed
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  EXPECT_EQ(sorted, identity);  // a permutation
  EXPECT_NE(a, identity);
}

TEST(SamplerTest, NoShuffleIsIdentityOrder) {
  std::vector<int64_t> identity(100);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  EXPECT_EQ(global_order(100, 7, 0, /*shuffle=*/false), identity);
  EXPECT_EQ(global_order(100, 9, 5, /*shuffle=*/false), identity);
  // Dealt strided: rank 1 of 3 with batch 2 reads 1, 4 | 7, 10 | ...
  const EpochPlan plan = Sampler(100, make_options(0, 1, 3, 2, LastBatch::kShort, false)).plan(0);
  EXPECT_EQ(all_batches(plan)[0], (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(all_batches(plan)[1], (std::vector<int64_t>{7, 10}));
}

TEST(SamplerTest, ExactlyOnceAcrossRanksOverGrid) {
  for (int64_t n : {1, 7, 64, 100, 1000, 1001}) {
    const std::vector<int64_t> order = global_order(n, 1, 2);
    for (int64_t batch : {1, 3, 8, 64}) {
      for (int w = 1; w <= 8; ++w) {
        for (LastBatch last : kModes) {
          SCOPED_TRACE(::testing::Message() << "n=" << n << " B=" << batch << " W=" << w
                                            << " last=" << kLastBatchNames.name(last));
          const std::vector<EpochPlan> plans = world_plans(n, w, batch, last, 2, 0);
          const int64_t per_rank = expected_per_rank(n, w, batch, last);
          const int64_t num_batches = (per_rank + batch - 1) / batch;
          for (const EpochPlan& plan : plans) {
            ASSERT_EQ(plan.num_batches(), num_batches);
            for (int64_t b = 0; b < num_batches; ++b) {
              const int64_t size = b + 1 < num_batches ? batch : per_rank - b * batch;
              ASSERT_EQ(static_cast<int64_t>(plan.batch(b).size), size);
            }
          }
          std::vector<int64_t> counts(n, 0);
          count_batches(plans, 0, num_batches, counts);
          if (last == LastBatch::kDrop) {
            // Exactly the first num_batches * B * W positions of the order, once each.
            const int64_t consumed = num_batches * batch * w;
            EXPECT_LT(n - consumed, w * batch);
            for (int64_t p = 0; p < n; ++p) ASSERT_EQ(counts[order[p]], p < consumed ? 1 : 0);
          } else {
            // Every index once, plus padding positions [n, padded) repeating order[p mod n].
            const int64_t padded = per_rank * w;
            std::vector<int64_t> expected(n, 1);
            for (int64_t p = n; p < padded; ++p) ++expected[order[p % n]];
            for (int64_t p = 0; p < n; ++p) ASSERT_EQ(counts[order[p]], expected[order[p]]);
            EXPECT_LT(padded - n, last == LastBatch::kPad ? w * batch : w);
          }
        }
      }
    }
  }
}

TEST(SamplerTest, PositionAfterIsConsumedPrefix) {
  for (int64_t n : {7, 100, 1001}) {
    const std::vector<int64_t> order = global_order(n, 1, 0);
    for (int64_t batch : {1, 3, 8}) {
      for (int w : {1, 2, 3, 5}) {
        for (LastBatch last : kModes) {
          for (int64_t start : {int64_t{0}, n / 3}) {
            SCOPED_TRACE(::testing::Message()
                         << "n=" << n << " B=" << batch << " W=" << w
                         << " last=" << kLastBatchNames.name(last) << " start=" << start);
            const std::vector<EpochPlan> plans = world_plans(n, w, batch, last, 0, start);
            std::vector<int64_t> counts(n, 0);
            for (int64_t b = 0; b < plans[0].num_batches(); ++b) {
              count_batches(plans, b, b + 1, counts);
              const int64_t position = plans[0].global_position_after(b);
              for (const EpochPlan& plan : plans)
                ASSERT_EQ(plan.global_position_after(b), position);
              ASSERT_EQ(position, std::min(n, start + (b + 1) * batch * w));
              if (position < n) {
                // No padding consumed yet: exactly the positions [start, position), once each.
                for (int64_t p = 0; p < n; ++p) {
                  ASSERT_EQ(counts[order[p]], p >= start && p < position ? 1 : 0) << p;
                }
              }
            }
            if (last != LastBatch::kDrop && plans[0].num_batches() > 0) {
              EXPECT_EQ(plans[0].global_position_after(plans[0].num_batches() - 1), n);
            }
          }
        }
      }
    }
  }
}

TEST(SamplerTest, ResumeOnSameWorldSizeYieldsRemainingBatches) {
  for (int64_t n : {7, 100, 1001}) {
    for (int64_t batch : {1, 3, 8}) {
      for (int w : {1, 2, 3, 5}) {
        for (LastBatch last : kModes) {
          for (int r = 0; r < w; ++r) {
            SCOPED_TRACE(::testing::Message()
                         << "n=" << n << " B=" << batch << " W=" << w
                         << " last=" << kLastBatchNames.name(last) << " rank=" << r);
            const Sampler sampler(n, make_options(3, r, w, batch, last));
            const EpochPlan full = sampler.plan(5);
            EXPECT_EQ(sampler.num_batches(), full.num_batches());
            const Batches full_batches = all_batches(full);
            for (int64_t k = 0; k < full.num_batches(); ++k) {
              const EpochPlan resumed = sampler.plan(5, full.global_position_after(k));
              EXPECT_EQ(sampler.num_batches(resumed.start()), resumed.num_batches());
              EXPECT_EQ(resumed.start(), full.global_position_after(k));
              EXPECT_EQ(resumed.epoch(), 5);
              const Batches expected(full_batches.begin() + k + 1, full_batches.end());
              ASSERT_EQ(all_batches(resumed), expected) << "k=" << k;
            }
          }
        }
      }
    }
  }
}

TEST(SamplerTest, ElasticResumeContinuesTheGlobalOrder) {
  const std::pair<int, int> changes[] = {{2, 3}, {3, 2}, {4, 1}, {1, 4}, {2, 7}};
  for (int64_t n : {7, 100, 1001}) {
    const std::vector<int64_t> order = global_order(n, 1, 1);
    for (int64_t batch : {1, 3, 8}) {
      for (auto [w, w2] : changes) {
        for (LastBatch last : kModes) {
          const std::vector<EpochPlan> before = world_plans(n, w, batch, last, 1, 0);
          // k = batches consumed before the checkpoint; the last batch would end the epoch.
          for (int64_t k = 1; k < before[0].num_batches(); ++k) {
            SCOPED_TRACE(::testing::Message()
                         << "n=" << n << " B=" << batch << " W=" << w << "->" << w2
                         << " last=" << kLastBatchNames.name(last) << " k=" << k);
            const int64_t position = before[0].global_position_after(k - 1);
            const std::vector<EpochPlan> after = world_plans(n, w2, batch, last, 1, position);
            ASSERT_EQ(after[0].start(), position);
            std::vector<int64_t> counts(n, 0);
            count_batches(before, 0, k, counts);
            count_batches(after, 0, after[0].num_batches(), counts);
            const int64_t remaining = n - position;
            if (last == LastBatch::kDrop) {
              // Once each, except a dropped tail of the order shorter than W' * B.
              const int64_t kept = position + after[0].num_batches() * batch * w2;
              EXPECT_LT(n - kept, w2 * batch);
              for (int64_t p = 0; p < n; ++p) ASSERT_EQ(counts[order[p]], p < kept ? 1 : 0);
            } else {
              // Once each, plus padding from the start of the order.
              const int64_t padded = position + expected_per_rank(remaining, w2, batch, last) * w2;
              std::vector<int64_t> expected(n, 1);
              for (int64_t p = n; p < padded; ++p) ++expected[order[p % n]];
              for (int64_t p = 0; p < n; ++p) ASSERT_EQ(counts[order[p]], expected[order[p]]);
            }
          }
        }
      }
    }
  }
}

// A shard-window order is dealt like the global one: each sample once across the ranks, and a
// run resumed on 2 ranks from 4, then on 4 again, reads the rest of the same order.
TEST(SamplerTest, WindowedOrderIsDealtExactlyOnceAndResumesElastically) {
  const std::vector<int64_t> shards = {37, 50, 12, 50, 50, 0, 41, 50};
  const int64_t n = 290;
  auto plans = [&](int world_size, int64_t batch, LastBatch last, int64_t start) {
    std::vector<EpochPlan> out;
    for (int r = 0; r < world_size; ++r) {
      SamplerOptions o = make_options(5, r, world_size, batch, last);
      o.shuffle_window = 3;
      out.push_back(Sampler(shards, o).plan(1, start));
    }
    return out;
  };
  SamplerOptions o = make_options(5, 0, 1, 1, LastBatch::kShort);
  o.shuffle_window = 3;
  const std::vector<int64_t> order = Sampler(shards, o).order(1);
  ASSERT_NE(order, global_order(n, 5, 1));
  for (int64_t batch : {1, 4, 7}) {
    for (LastBatch last : kModes) {
      SCOPED_TRACE(::testing::Message() << "B=" << batch << " last=" << kLastBatchNames.name(last));
      // Dealt strided over the windowed order: rank r's batch 0 holds positions r, r + W, ...
      const std::vector<EpochPlan> four = plans(4, batch, last, 0);
      for (int r = 0; r < 4; ++r) {
        for (int64_t i = 0; i < batch; ++i) {
          ASSERT_EQ(four[r].batch(0)[i], order[i * 4 + r]);
        }
      }
      std::vector<int64_t> counts(n, 0);
      count_batches(four, 0, 3, counts);
      const int64_t first_stop = four[0].global_position_after(2);
      const std::vector<EpochPlan> two = plans(2, batch, last, first_stop);
      count_batches(two, 0, 5, counts);
      const int64_t second_stop = two[0].global_position_after(4);
      const std::vector<EpochPlan> again = plans(4, batch, last, second_stop);
      count_batches(again, 0, again[0].num_batches(), counts);
      const int64_t per_rank = expected_per_rank(n - second_stop, 4, batch, last);
      if (last == LastBatch::kDrop) {
        const int64_t kept = second_stop + again[0].num_batches() * batch * 4;
        for (int64_t p = 0; p < n; ++p) ASSERT_EQ(counts[order[p]], p < kept ? 1 : 0);
      } else {
        std::vector<int64_t> expected(n, 1);
        for (int64_t p = n; p < second_stop + per_rank * 4; ++p) ++expected[order[p % n]];
        for (int64_t p = 0; p < n; ++p) ASSERT_EQ(counts[order[p]], expected[order[p]]);
      }
    }
  }
}

// Repeated augmentation: the order holds each base sample k times in a row for an epoch of N
// positions; a plan carries each position's repeat (its position mod k); the pairs (sample,
// repeat) are dealt exactly once over the ranks, the repeats of a sample to distinct ranks when
// W >= k, and a resume on another world size goes on with the pairs left.
TEST(SamplerTest, RepeatsHoldEachSampleKTimesInARowOncePerRepeat) {
  for (int64_t n : {7, 100, 1001}) {
    for (int64_t k : {2, 3, 4}) {
      SamplerOptions base_options = make_options(3, 0, 1, 1, LastBatch::kShort);
      const std::vector<int64_t> base = Sampler(n, base_options).order(1);
      base_options.repeats = k;
      const std::vector<int64_t> order = Sampler(n, base_options).order(1);
      ASSERT_EQ(static_cast<int64_t>(order.size()), n);
      for (int64_t q = 0; q < n; ++q) ASSERT_EQ(order[q], base[q / k]) << "q=" << q;
      for (auto [w, w2] : {std::pair<int, int>{1, 1}, {4, 2}, {3, 5}, {int(k), int(k)}}) {
        for (int64_t batch : {1, 3, 8}) {
          SCOPED_TRACE(::testing::Message()
                       << "n=" << n << " k=" << k << " W=" << w << "->" << w2 << " B=" << batch);
          auto plans = [&](int world_size, int64_t start) {
            std::vector<EpochPlan> out;
            for (int r = 0; r < world_size; ++r) {
              SamplerOptions o = make_options(3, r, world_size, batch, LastBatch::kDrop);
              o.repeats = k;
              out.push_back(Sampler(n, o).plan(1, start));
            }
            return out;
          };
          // pair id (position of the pair in the order) -> times dealt; sample -> its ranks.
          std::vector<int64_t> dealt(n, 0);
          std::vector<std::vector<int>> ranks_of(n);
          auto deal = [&](const std::vector<EpochPlan>& world, int64_t last_batch) {
            for (size_t r = 0; r < world.size(); ++r) {
              for (int64_t b = 0; b < last_batch; ++b) {
                const IndexSpan span = world[r].batch(b);
                ASSERT_NE(span.repeats, nullptr);
                for (size_t i = 0; i < span.size; ++i) {
                  const int64_t repeat = span.repeat(i);
                  ASSERT_GE(repeat, 0);
                  ASSERT_LT(repeat, k);
                  const auto at = std::find(base.begin(), base.end(), span[i]) - base.begin();
                  const int64_t q = at * k + repeat;
                  ASSERT_LT(q, n);
                  ++dealt[q];
                  ranks_of[span[i]].push_back(static_cast<int>(r));
                }
              }
            }
          };
          const std::vector<EpochPlan> before = plans(w, 0);
          const int64_t stop = std::max<int64_t>(before[0].num_batches() / 2, 0);
          deal(before, stop);
          const int64_t position = stop > 0 ? before[0].global_position_after(stop - 1) : 0;
          const std::vector<EpochPlan> after = plans(w2, position);
          deal(after, after[0].num_batches());
          const int64_t kept = position + after[0].num_batches() * batch * w2;
          for (int64_t q = 0; q < n; ++q) ASSERT_EQ(dealt[q], q < kept ? 1 : 0) << "q=" << q;
          if (w2 == w && w >= k) {
            for (const std::vector<int>& ranks : ranks_of) {
              std::vector<int> sorted = ranks;
              std::sort(sorted.begin(), sorted.end());
              ASSERT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
            }
          }
        }
      }
    }
  }
  // Without repeats a plan carries none: every repeat is 0.
  const EpochPlan plain = Sampler(10, make_options(0, 0, 1, 4, LastBatch::kShort)).plan(0);
  EXPECT_EQ(plain.batch(0).repeats, nullptr);
  EXPECT_EQ(plain.batch(0).repeat(3), 0);
}

TEST(SamplerTest, StartAtOrPastEndIsEmpty) {
  const Sampler sampler(10, make_options(0, 0, 2, 3, LastBatch::kShort));
  EXPECT_EQ(sampler.plan(0, 10).num_batches(), 0);
  EXPECT_EQ(sampler.plan(0, 25).num_batches(), 0);
  EXPECT_EQ(EpochPlan().num_batches(), 0);
  // kDrop: a remainder smaller than W * B is empty as well; kPad fills it into one batch.
  EXPECT_EQ(Sampler(10, make_options(0, 0, 2, 3, LastBatch::kDrop)).plan(0, 5).num_batches(), 0);
  EXPECT_EQ(Sampler(10, make_options(0, 0, 2, 3, LastBatch::kDrop)).plan(0, 4).num_batches(), 1);
  EXPECT_EQ(Sampler(10, make_options(0, 0, 2, 3, LastBatch::kPad)).plan(0, 5).num_batches(), 1);
  EXPECT_EQ(Sampler(10, make_options(0, 0, 2, 3, LastBatch::kPad)).plan(0, 10).num_batches(), 0);
}

// The first unpadded_samples() indices of each rank's deal cover every sample of the epoch from
// `start` exactly once; the rest is padding.
TEST(SamplerTest, UnpaddedSamplesAreEachSampleOnce) {
  for (int64_t n : {1, 7, 10, 12}) {
    for (int world_size : {1, 2, 3, 5}) {
      for (int64_t start = 0; start <= n; ++start) {
        std::vector<int64_t> counts(n, 0);
        int64_t total = 0;
        for (int r = 0; r < world_size; ++r) {
          const EpochPlan plan =
              Sampler(n, make_options(3, r, world_size, 4, LastBatch::kShort)).plan(0, start);
          const int64_t real = unpadded_samples(n, start, r, world_size);
          int64_t seen = 0;
          for (const std::vector<int64_t>& batch : all_batches(plan))
            for (int64_t i : batch)
              if (seen++ < real) ++counts[i];
          total += real;
        }
        EXPECT_EQ(total, n - start) << n << " " << world_size << " " << start;
        for (int64_t i = 0; i < n; ++i) EXPECT_LE(counts[i], 1) << i;
      }
    }
  }
}

// padding(b) is the tail of batch b whose positions lie past the dataset: recomputed here from
// the positions themselves, for every mode, start and rank; with kPad every batch is full.
TEST(SamplerTest, PaddingIsEachBatchsTailPastTheDataset) {
  for (LastBatch last : kModes) {
    for (int64_t n : {1, 7, 10, 12, 100}) {
      for (int w : {1, 2, 3, 5}) {
        for (int64_t batch : {1, 4, 8, 32}) {
          for (int64_t start : {int64_t{0}, n / 2, n - 1}) {
            SCOPED_TRACE(::testing::Message()
                         << "n=" << n << " B=" << batch << " W=" << w << " start=" << start
                         << " last=" << kLastBatchNames.name(last));
            int64_t padding_total = 0;
            for (int r = 0; r < w; ++r) {
              const EpochPlan plan = Sampler(n, make_options(3, r, w, batch, last)).plan(0, start);
              for (int64_t b = 0; b < plan.num_batches(); ++b) {
                const auto size = static_cast<int64_t>(plan.batch(b).size);
                if (last == LastBatch::kPad) {
                  ASSERT_EQ(size, batch);
                }
                int64_t past_end = 0;  // positions start + (b*B + i)*W + r >= n, a tail
                for (int64_t i = 0; i < size; ++i) {
                  const bool padded = start + (b * batch + i) * w + r >= n;
                  ASSERT_EQ(padded, i >= size - plan.padding(b)) << "b=" << b << " i=" << i;
                  past_end += padded;
                }
                ASSERT_EQ(plan.padding(b), past_end);
                padding_total += past_end;
              }
            }
            const int64_t dealt = expected_per_rank(n - start, w, batch, last) * w;
            EXPECT_EQ(padding_total, last == LastBatch::kDrop ? 0 : dealt - (n - start));
          }
        }
      }
    }
  }
}

TEST(SamplerTest, PlansAreIndependentOfEachOtherAndCopiesShareData) {
  const Sampler sampler(50, make_options(4, 1, 2, 4, LastBatch::kShort));
  const EpochPlan a = sampler.plan(0);
  const EpochPlan copy = a;
  const EpochPlan b = sampler.plan(1);
  EXPECT_EQ(copy.batch(2).data, a.batch(2).data);
  EXPECT_NE(all_batches(a), all_batches(b));
  EXPECT_EQ(sampler.dataset_size(), 50);
  EXPECT_EQ(sampler.options().rank, 1);
  EXPECT_EQ(sampler.options().batch_size, 4);
}

// This rank's deal of the epoch's samples by the definition (sampler.h): position
// start + i W + r, wrapping past N, for each of the rank's samples; its repeat position mod k;
// its dataset index and part the sample's quotient and remainder by K.
struct Deal {
  std::vector<int64_t> indices, repeats, parts;
  bool operator==(const Deal& o) const {
    return std::tie(indices, repeats, parts) == std::tie(o.indices, o.repeats, o.parts);
  }
};

Deal dealt(const std::vector<int64_t>& samples, int64_t start, int w, int r, int64_t k,
           int64_t per_record, int64_t per_rank) {
  Deal d;
  const auto n = static_cast<int64_t>(samples.size());
  for (int64_t i = 0; i < per_rank; ++i) {
    const int64_t position = (start + i * w + r) % n;
    d.indices.push_back(samples[position] / per_record);
    d.repeats.push_back(position % k);
    d.parts.push_back(samples[position] % per_record);
  }
  return d;
}

Deal deal_of(const EpochPlan& plan) {
  Deal d;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const IndexSpan span = plan.batch(b);
    for (size_t j = 0; j < span.size; ++j) {
      d.indices.push_back(span[j]);
      d.repeats.push_back(span.repeat(j));
      d.parts.push_back(span.part(j));
    }
  }
  return d;
}

// The plan, and the plan from the samples a caller computed (the loader's, shared with its
// shard schedule), deal the epoch's samples as defined, whatever the world, rank, start,
// repeats, last batch and samples per record (a single rank's from the start takes the
// samples as its indices).
TEST(SamplerTest, PlansDealTheEpochsSamplesAsDefined) {
  for (const int64_t per_record : {1, 3}) {
    for (const int64_t records : {1, 7, 100}) {
      OrderInput input;
      input.seed = 5;
      input.parts = {{records}};
      const auto order =
          make_order("per_record", input, {{"samples", per_record}}).value_or_throw();
      const int64_t n = order->epoch_size();
      for (const int w : {1, 2, 3}) {
        for (const int64_t k : {1, 2}) {
          for (LastBatch last : kModes) {
            for (const int64_t start : {int64_t{0}, int64_t{1}, n / 2, n}) {
              for (int r = 0; r < w; ++r) {
                SamplerOptions options = make_options(5, r, w, 4, last);
                options.repeats = k;
                const Sampler sampler(order, options);
                SCOPED_TRACE(::testing::Message()
                             << "K=" << per_record << " n=" << n << " W=" << w << " r=" << r
                             << " k=" << k << " last=" << kLastBatchNames.name(last)
                             << " start=" << start);
                const std::vector<int64_t> samples = sampler.samples(3);
                const Deal expected = dealt(samples, start, w, r, k, per_record,
                                            expected_per_rank(n - std::min(start, n), w, 4, last));
                EXPECT_EQ(deal_of(sampler.plan(3, start)), expected);
                EXPECT_EQ(deal_of(sampler.plan(3, start, samples)), expected);
              }
            }
          }
        }
      }
    }
  }
}

void expect_invalid_argument(void (*f)()) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  }
}

// Bad options are LoaderCore's to refuse (loader_core_test); a plan's bad arguments throw.
TEST(SamplerTest, BadArgumentsThrow) {
  expect_invalid_argument([] { Sampler(10, SamplerOptions{}).plan(-1); });
  expect_invalid_argument([] { Sampler(10, SamplerOptions{}).plan(0, -1); });
  expect_invalid_argument([] { Sampler(10, SamplerOptions{}).samples(-1); });
  expect_invalid_argument(
      [] { Sampler(10, SamplerOptions{}).plan(-1, 0, Sampler(10, SamplerOptions{}).samples(0)); });
  expect_invalid_argument(
      [] { Sampler(10, make_options(0, 0, 1, 3, LastBatch::kShort)).plan(0).batch(4); });
  expect_invalid_argument(
      [] { Sampler(10, make_options(0, 0, 1, 3, LastBatch::kShort)).plan(0).batch(-1); });
  expect_invalid_argument([] {
    Sampler(10, make_options(0, 0, 1, 3, LastBatch::kShort)).plan(0).global_position_after(4);
  });
  expect_invalid_argument([] { EpochPlan().batch(0); });
  // A prefetch out of range asks for nothing (the engine asks a batch past the last).
  const EpochPlan plan = Sampler(10, make_options(0, 0, 1, 3, LastBatch::kShort)).plan(0);
  for (int64_t b : {int64_t{-1}, int64_t{0}, int64_t{3}, int64_t{4}, int64_t{1} << 40})
    EXPECT_NO_THROW(plan.prefetch(b)) << b;
  EXPECT_NO_THROW(EpochPlan().prefetch(0));
}

}  // namespace
}  // namespace stoker
