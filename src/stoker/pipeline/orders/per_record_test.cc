// The "per_record" order: each record K samples an epoch (r K + k: its part k), the global
// shuffle of every record K times, dealt exactly once per (record, part) for any workers and
// world size, and after a resume on another world size; each sample draws from its own stream.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <numeric>
#include <set>

#include "stoker/pipeline/order_registry.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/testing/loader_fixture.h"

namespace stoker {
namespace {

OrderInput shards_of(std::vector<int64_t> shards, bool shuffle = true) {
  OrderInput input;
  input.seed = 7;
  input.shuffle = shuffle;
  input.parts = {std::move(shards)};
  return input;
}

std::shared_ptr<const GlobalOrder> per_record(const OrderInput& input, int64_t k,
                                              int64_t window = 0) {
  return make_order("per_record", input, {{"samples", k}, {"window", window}}).value_or_throw();
}

TEST(PerRecordOrder, IsTheGlobalOrderOfEveryRecordKTimesInARow) {
  const auto order = per_record(shards_of({7, 7, 3}), 3);
  EXPECT_EQ(order->samples_per_record(), 3);
  ASSERT_EQ(order->epoch_size(), 17 * 3);
  const auto global = make_order("global", shards_of({21, 21, 9})).value_or_throw();
  for (int64_t epoch : {0, 1, 5}) EXPECT_EQ(order->order(epoch), global->order(epoch)) << epoch;
  const auto window = make_order("shard_window", shards_of({21, 21, 9}), {{"window", 1}});
  EXPECT_EQ(per_record(shards_of({7, 7, 3}), 3, 1)->order(2), window.value()->order(2));
  // Unshuffled: each record's samples in a row, in order (evaluation's clips of a video).
  std::vector<int64_t> identity(51);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(per_record(shards_of({7, 7, 3}, false), 3)->order(0), identity);
  // The other orders give a sample a record.
  EXPECT_EQ(global->samples_per_record(), 1);
}

// Spread, not in a row as repeated augmentation puts a sample's repeats: with seed 7, 12
// records of 3 samples, one pair of positions side by side holds one record's samples (a
// uniform shuffle's expected 2 of 35), against 24 pairs under ra_reps 3.
TEST(PerRecordOrder, ARecordsSamplesAreNotSideBySide) {
  const auto side_by_side = [](const std::vector<int64_t>& records) {
    int pairs = 0;
    for (size_t p = 1; p < records.size(); ++p) pairs += records[p] == records[p - 1];
    return pairs;
  };
  std::vector<int64_t> order = per_record(shards_of({12}), 3)->order(0);
  EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), 36u);
  for (int64_t& s : order) s /= 3;
  EXPECT_EQ(side_by_side(order), 1);
  SamplerOptions ra;
  ra.seed = 7;
  ra.repeats = 3;
  EXPECT_EQ(side_by_side(Sampler(36, ra).order(0)), 24);
}

TEST(PerRecordOrder, BadParametersAreRefused) {
  EXPECT_FALSE(make_order("per_record", shards_of({4}), {{"samples", int64_t{0}}}).is_ok());
  OrderInput two = shards_of({4});
  two.parts.push_back({3});
  EXPECT_EQ(make_order("per_record", two, {{"samples", int64_t{2}}}).status().message(),
            "order 'per_record': one dataset, not a mixture of 2 sources");
}

// Writes the sample's number, its part and its first random word.
class SampleOf : public Transform {
 public:
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {3}; }
  Status apply(const SampleInput& in, uint8_t* slot) const override {
    const int64_t out[3] = {in.index, in.part, static_cast<int64_t>(in.rng().next_u64())};
    std::memcpy(slot, out, sizeof out);
    return Status::ok();
  }
};

class PerRecordLoaderTest : public testing::LoaderFixture {
 protected:
  // 2 samples a record (1003 records: 2006 samples), batches of 16.
  static LoaderOptions two_each(int workers, int rank, int world) {
    LoaderOptions o = options(workers, rank, world);
    o.order = "per_record";
    o.order_params = {{"samples", int64_t{2}}};
    o.fields = {{"sample", std::make_shared<SampleOf>()}};
    return o;
  }
  // The samples of epoch 1 the loader delivers (its first `batches`, -1: all), each checked:
  // its record r and part k make sample r 2 + k, and it draws from that sample's stream.
  static std::vector<int64_t> samples(LoaderCore& loader, int64_t batches = -1) {
    std::vector<int64_t> out;
    LoaderCore::Epoch epoch = loader.epoch(1);
    HostBatch b;
    for (int64_t n = 0; n != batches && epoch.next(b); ++n) {
      const auto* v = static_cast<const int64_t*>(b["sample"].data);
      for (int64_t i = 0; i < b.size; ++i) {
        const int64_t s = v[3 * i];
        EXPECT_EQ(b.records[i] * 2 + v[3 * i + 1], s) << "batch " << b.index << ", sample " << i;
        EXPECT_EQ(static_cast<uint64_t>(v[3 * i + 2]),
                  CounterRng(5, sample_stream(1, s)).next_u64());
        out.push_back(s);
      }
    }
    return out;
  }
};

// Every (record, part) exactly once: for 1 and 2 workers, 1 and 2 ranks, and an epoch begun on
// 2 ranks and resumed on 3 (and on 1); the same samples in the same places for any workers.
TEST_F(PerRecordLoaderTest, EachRecordsSamplesComeExactlyOnceForAnyWorkersRanksAndResume) {
  const auto expect_each_once = [](const std::multiset<int64_t>& seen, const std::string& what) {
    EXPECT_EQ(seen.size(), 2u * kRecords) << what;
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 2u * kRecords) << what;
    EXPECT_EQ(*seen.rbegin(), 2 * kRecords - 1) << what;
  };
  std::vector<int64_t> one_worker;
  for (int workers : {0, 1, 2}) {
    for (int world : {1, 2}) {
      std::multiset<int64_t> seen;
      for (int rank = 0; rank < world; ++rank) {
        LoaderCore loader(dataset_, two_each(workers, rank, world));
        const std::vector<int64_t> got = samples(loader);
        if (world == 1 && workers == 0) one_worker = got;
        if (world == 1) EXPECT_EQ(got, one_worker) << workers << " workers";
        seen.insert(got.begin(), got.end());
      }
      expect_each_once(seen, std::to_string(workers) + " workers, world " + std::to_string(world));
    }
    for (int resumed_on : {3, 1}) {
      std::multiset<int64_t> seen;
      LoaderState state;
      for (int rank = 0; rank < 2; ++rank) {
        LoaderCore loader(dataset_, two_each(workers, rank, 2));
        const std::vector<int64_t> got = samples(loader, 10);
        seen.insert(got.begin(), got.end());
        if (rank == 0) state = loader.state();
      }
      EXPECT_EQ(state.position, 10 * 16 * 2);
      for (int rank = 0; rank < resumed_on; ++rank) {
        LoaderCore loader(dataset_, two_each(workers, rank, resumed_on));
        loader.restore(state);
        const std::vector<int64_t> got = samples(loader);
        seen.insert(got.begin(), got.end());
      }
      expect_each_once(seen, "resumed on " + std::to_string(resumed_on));
    }
  }
  // The loader's order is the order's: records' samples shuffled among all.
  const std::vector<int64_t> order =
      make_order("per_record", shards_of({kRecords}), {{"samples", int64_t{2}}})
          .value_or_throw()
          ->order(1);
  EXPECT_NE(one_worker, order);  // seed 5, not 7
  OrderInput five = shards_of({kRecords});
  five.seed = 5;
  const std::vector<int64_t> seeded =
      make_order("per_record", five, {{"samples", int64_t{2}}}).value_or_throw()->order(1);
  EXPECT_EQ(one_worker, seeded);
}

}  // namespace
}  // namespace stoker
