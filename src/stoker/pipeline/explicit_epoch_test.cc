// LoaderCore's explicit epochs (a caller's sampler: EpochPlan::of_batches): the given indices in
// the given batches and order for any worker count, positions of the caller's sequence, start
// and restore, one-line refusals before any work, and a fetched dataset advised that order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/pipeline/loader_core.h"
#include "stoker/pipeline/schedule_from_order.h"
#include "stoker/testing/loader_fixture.h"
#include "stoker/testing/slow_shard_source.h"

namespace stoker {
namespace {

// Writes the sample's record index: which record the batch slot holds; fails record `bad`.
class IndexOf : public Transform {
 public:
  explicit IndexOf(int64_t bad = -1) : bad_(bad) {}
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput& in, uint8_t* slot) const override {
    std::memcpy(slot, &in.index, sizeof in.index);
    return in.index == bad_ ? corrupt("a bad record") : Status::ok();
  }

 private:
  int64_t bad_;
};

// 60 indices in 7 batches of unequal sizes (the loader's batch size, 16, the largest), record
// 77 three times (twice in one batch), the last records and record 0 among them.
ExplicitBatches sixty(int64_t start = 0) {
  ExplicitBatches b;
  for (int64_t k = 0; k < 60; ++k) b.indices.push_back((k * 389 + 1002) % 1003);
  b.indices[10] = b.indices[11] = b.indices[40] = 77;
  b.batch_sizes = {16, 1, 7, 16, 3, 16, 1};
  b.start = start;
  return b;
}

// Batches [first, last) of `batches`' indices cut into its batches.
std::vector<std::vector<int64_t>> cut(const ExplicitBatches& batches, size_t first = 0,
                                      size_t last = SIZE_MAX) {
  std::vector<std::vector<int64_t>> out;
  auto at = batches.indices.begin();
  for (size_t b = 0; b < batches.batch_sizes.size(); ++b) {
    const auto end = at + batches.batch_sizes[b];
    if (b >= first && b < last) out.emplace_back(at, end);
    at = end;
  }
  return out;
}

class ExplicitEpochTest : public testing::LoaderFixture {
 protected:
  // Batches of 16, the record index as the one field.
  static LoaderOptions index_options(WorkerCount workers) {
    LoaderOptions o = options(workers);
    o.fields = {{"index", std::make_shared<IndexOf>()}};
    return o;
  }
  // The record indices of each batch of `epoch` (of `loader`), at most `max_batches` of them;
  // `states`, if given, gets the loader's state after each.
  static std::vector<std::vector<int64_t>> indices_of(LoaderCore& loader, LoaderCore::Epoch epoch,
                                                      int64_t max_batches = -1,
                                                      std::vector<LoaderState>* states = nullptr) {
    std::vector<std::vector<int64_t>> out;
    HostBatch b;
    while (static_cast<int64_t>(out.size()) != max_batches && epoch.next(b)) {
      EXPECT_EQ(b.index, static_cast<int64_t>(out.size()));
      EXPECT_EQ(b.padding, 0);
      const auto* v = static_cast<const int64_t*>(b["index"].data);
      out.emplace_back(v, v + b.size);
      if (states) states->push_back(loader.state());
    }
    return out;
  }
  // The message of the Error (kInvalidArgument) that the explicit epoch 0 over `batches`
  // throws at the call; "no error" if none.
  static std::string refusal(LoaderCore& loader, ExplicitBatches batches) {
    try {
      loader.epoch(0, std::move(batches));
    } catch (const Error& e) {
      EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
      return e.status().message();
    }
    return "no error";
  }
  // indices_of() the explicit epoch e over `batches`.
  static std::vector<std::vector<int64_t>> read(LoaderCore& loader, int64_t e,
                                                ExplicitBatches batches, int64_t max_batches = -1,
                                                std::vector<LoaderState>* states = nullptr) {
    return indices_of(loader, loader.epoch(e, std::move(batches)), max_batches, states);
  }
};

TEST(EpochPlanOfBatchesTest, CutsTheSequenceAtTheGivenSizesFromItsStart) {
  const EpochPlan plan = EpochPlan::of_batches(4, sixty(24), 1003, 16);
  EXPECT_EQ(plan.epoch(), 4);
  EXPECT_EQ(plan.start(), 24);
  ASSERT_EQ(plan.num_batches(), 4);
  const auto expected = cut(sixty(), 3);
  int64_t position = 24;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const IndexSpan span = plan.batch(b);
    EXPECT_EQ(std::vector<int64_t>(span.begin(), span.end()), expected[b]);
    EXPECT_EQ(plan.padding(b), 0);
    position += static_cast<int64_t>(span.size);
    EXPECT_EQ(plan.global_position_after(b), position);
  }
  const IndexSpan all = plan.sequence();
  EXPECT_EQ(std::vector<int64_t>(all.begin(), all.end()), sixty().indices);
  // Record 77's three occurrences are its repeats 0, 1 and 2 (their own draws); the rest 0.
  for (size_t k = 0; k < all.size; ++k)
    EXPECT_EQ(all.repeat(k), k == 11 ? 1 : k == 40 ? 2 : 0) << "position " << k;
  EXPECT_EQ(EpochPlan::of_batches(0, sixty(60), 1003, 16).num_batches(), 0);
}

// Without repeats (a mixture dealing a cycling source's record twice), every occurrence draws as
// the record's first, whichever rank's share holds it.
TEST(EpochPlanOfBatchesTest, WithoutRepeatsEveryOccurrenceDrawsAsTheFirst) {
  ExplicitBatches batches = sixty(24);
  batches.repeats = false;
  const IndexSpan all = EpochPlan::of_batches(4, std::move(batches), 1003, 16).sequence();
  for (size_t k = 0; k < all.size; ++k) EXPECT_EQ(all.repeat(k), 0) << "position " << k;
}

TEST_F(ExplicitEpochTest, GivenIndicesInTheGivenBatchesForAnyWorkerCount) {
  for (WorkerCount workers :
       {WorkerCount(0), WorkerCount(1), WorkerCount(3), WorkerCount::tuned()}) {
    LoaderCore loader(dataset_, index_options(workers));
    EXPECT_EQ(read(loader, 2, sixty()), cut(sixty())) << workers.to_string();
    EXPECT_EQ(loader.stats().samples.load(), 60) << workers.to_string();  // nothing built behind
    EXPECT_EQ(loader.epoch(2, sixty()).size(), 7);
  }
}

TEST_F(ExplicitEpochTest, StateCountsTheSequencesSamplesAndStartResumesThere) {
  for (int workers : {0, 3}) {
    LoaderCore loader(dataset_, index_options(workers));
    std::vector<LoaderState> states;
    read(loader, 5, sixty(), -1, &states);
    const std::vector<int64_t> positions = {16, 17, 24, 40, 43, 59};
    ASSERT_EQ(states.size(), 7u);
    for (size_t b = 0; b < positions.size(); ++b) {
      EXPECT_EQ(states[b].epoch, 5);
      EXPECT_EQ(states[b].position, positions[b]);
    }
    EXPECT_EQ(states.back().epoch, 6);
    EXPECT_EQ(states.back().position, 0);

    // Three batches read, then a loader restored there starts the sequence where they ended.
    LoaderCore first(dataset_, index_options(workers));
    EXPECT_EQ(read(first, 5, sixty(), 3), cut(sixty(), 0, 3));
    const LoaderState saved = first.state();
    EXPECT_EQ(saved.position, 24);
    LoaderCore second(dataset_, index_options(workers));
    second.restore(saved);
    states.clear();
    EXPECT_EQ(read(second, saved.epoch, sixty(second.state().position), -1, &states),
              cut(sixty(), 3));
    EXPECT_EQ(states.front().position, 40);
    EXPECT_EQ(second.state().epoch, 6);
    EXPECT_EQ(second.state().position, 0);
  }
}

// The work an ordinary epoch built ahead for the next is dropped for an explicit one, and an
// ordinary epoch after an explicit one is the loader's own.
TEST_F(ExplicitEpochTest, ExplicitAndOrdinaryEpochsFollowEachOther) {
  for (int workers : {0, 3}) {
    LoaderCore reference(dataset_, index_options(workers));
    const auto own = indices_of(reference, reference.epoch(2));
    LoaderCore loader(dataset_, index_options(workers));
    indices_of(loader, loader.epoch(0));
    EXPECT_EQ(read(loader, 1, sixty()), cut(sixty()));
    EXPECT_EQ(indices_of(loader, loader.epoch(2)), own);
  }
}

TEST_F(ExplicitEpochTest, AnIndexOutsideTheDatasetFailsAtTheCallNamingItsBatch) {
  LoaderCore loader(dataset_, index_options(2));
  ExplicitBatches bad = sixty();
  bad.indices[30] = 1200000;  // batch 3 holds samples [24, 40), batch 4 [40, 43)
  bad.indices[41] = 1200000;
  EXPECT_EQ(refusal(loader, bad),
            "the sampler's batch 3 holds index 1200000, outside the dataset's 1003 records");
  bad = sixty(43);  // before the start too
  bad.indices[0] = -1;
  EXPECT_EQ(refusal(loader, bad),
            "the sampler's batch 0 holds index -1, outside the dataset's 1003 records");
  EXPECT_EQ(loader.stats().batches.load(), 0);  // no work began
  EXPECT_EQ(read(loader, 0, sixty()), cut(sixty()));
}

TEST_F(ExplicitEpochTest, BadSizesAndStartsAreRefusedNamingThem) {
  LoaderCore loader(dataset_, index_options(2));
  ExplicitBatches b = sixty();
  b.batch_sizes[1] = 0;
  b.batch_sizes[2] = 8;
  EXPECT_EQ(refusal(loader, b),
            "the sampler's batch 1 holds 0 samples, outside [1, 16] (the loader's batch_size)");
  b = sixty();
  b.batch_sizes[0] = 17;
  EXPECT_EQ(refusal(loader, b),
            "the sampler's batch 0 holds 17 samples, outside [1, 16] (the loader's batch_size)");
  b = sixty();
  b.batch_sizes.pop_back();
  EXPECT_EQ(refusal(loader, b), "the sampler's batch sizes sum to 59, not the 60 indices");
  for (int64_t start : {-16, 5, 61}) {
    EXPECT_EQ(refusal(loader, sixty(start)),
              "start " + std::to_string(start) +
                  " is not where one of the sampler's batches begins, nor the end of its 60 "
                  "indices");
  }
  EXPECT_EQ(refusal(loader, sixty(60)), "no error");
  EXPECT_EQ(read(loader, 0, sixty(17)), cut(sixty(), 2));
  EXPECT_THROW(loader.epoch(-1, sixty()), Error);
}

TEST_F(ExplicitEpochTest, AnEmptySequenceIsAnEpochOfNoBatches) {
  for (int workers : {0, 2}) {
    LoaderCore loader(dataset_, index_options(workers));
    LoaderCore::Epoch epoch = loader.epoch(0, ExplicitBatches{});
    EXPECT_EQ(epoch.size(), 0);
    HostBatch b;
    EXPECT_FALSE(epoch.next(b));
  }
}

// The error policy as in the loader's own epochs: a bad record fails its batch naming it, or is
// dropped from it (each time it is given) and counted.
TEST_F(ExplicitEpochTest, ABadRecordRaisesOrIsSkippedEachTimeItIsGiven) {
  for (int workers : {0, 3}) {
    LoaderOptions o = index_options(workers);
    o.fields = {{"index", std::make_shared<IndexOf>(77)}};
    LoaderCore raising(dataset_, o);
    try {
      read(raising, 0, sixty());
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(e.status().message().find("a bad record (dataset record 77)"), std::string::npos)
          << e.what();
    }
    o.on_error = ErrorPolicy::kSkip;
    LoaderCore skipping(dataset_, o);
    auto expected = cut(sixty());
    for (auto& batch : expected)
      batch.erase(std::remove(batch.begin(), batch.end(), 77), batch.end());
    EXPECT_EQ(read(skipping, 0, sixty()), expected);
    EXPECT_EQ(skipping.stats().skipped.load(), 3);
  }
}

// A dataset whose shards are fetched is advised the explicit order: this rank's sequence, its
// positions, and no next epoch; it reads the directory's records.
TEST_F(ExplicitEpochTest, AFetchedDatasetIsAdvisedTheExplicitOrder) {
  for (int workers : {0, 3}) {
    auto source = testing::SlowShardSource::open(dir_ / "ds", std::chrono::microseconds(20));
    LoaderCore loader(Dataset::open(source).value_or_throw(), index_options(workers));
    EXPECT_EQ(read(loader, 3, sixty(), 4), cut(sixty(), 0, 4));
    const ShardSchedule schedule = source->schedule();
    const std::vector<uint64_t>& starts = dataset_->shard_starts();
    const ShardSchedule expected = schedule_from_order(
        3, sixty().indices, {}, std::vector<int64_t>(starts.begin(), starts.end()));
    EXPECT_EQ(schedule.epoch, 3);
    EXPECT_EQ(schedule.epoch_size, 60);
    ASSERT_EQ(schedule.now.size(), expected.now.size());
    for (size_t s = 0; s < expected.now.size(); ++s) {
      EXPECT_EQ(schedule.now[s].first, expected.now[s].first) << s;
      EXPECT_EQ(schedule.now[s].last, expected.now[s].last) << s;
      EXPECT_EQ(schedule.after[s].first, ShardUse::kUnused) << s;
    }
    EXPECT_EQ(source->lookahead(), (3 + 2) * 16);
    EXPECT_EQ(source->position(), 40);
  }
}

}  // namespace
}  // namespace stoker
