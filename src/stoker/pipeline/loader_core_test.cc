// LoaderCore: order, exactly-once and resume (elastic too) independent of worker count, the
// error policy for checksums and transforms, the one live epoch, the persistent pool. Torch-free:
// these run under ASan+UBSan and TSan. workers == 0 is the single-thread variant of each.
#include "stoker/pipeline/loader_core.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "stoker/pipeline/sample_cost.h"
#include "stoker/testing/chrome_trace_check.h"
#include "stoker/testing/loader_fixture.h"
#include "stoker/testing/slow_shard_source.h"
#include "stoker/trace/chrome_trace.h"
#include "stoker/util/cancel_scope.h"
#include "stoker/util/machine.h"
#include "stoker/util/mapped_read_guard.h"

namespace stoker {
namespace {

// Writes the sample's first random word and its record length: what a transform sees.
class EchoInput : public Transform {
 public:
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {3}; }
  Status apply(const SampleInput& in, uint8_t* slot) const override {
    const int64_t out[3] = {static_cast<int64_t>(in.rng().next_u64()), in.index,
                            static_cast<int64_t>(in.record.size)};
    std::memcpy(slot, out, sizeof out);
    return Status::ok();
  }
};

// Fails samples whose label is `bad`: by Status, by throwing a std::exception, or an int.
class FailOn : public Transform {
 public:
  enum How { kStatus, kThrowStd, kThrowInt };
  FailOn(int64_t bad, How how) : bad_(bad), how_(how) {}
  DType dtype() const override { return DType::kUint8; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput& in, uint8_t* slot) const override {
    int64_t label;
    std::memcpy(&label, in.record.data + 4, sizeof label);
    *slot = 1;
    if (label != bad_) return Status::ok();
    if (how_ == kThrowStd) throw std::runtime_error("decoder exploded");
    if (how_ == kThrowInt) throw 42;
    return corrupt("not a JPEG");
  }

 private:
  int64_t bad_;
  How how_;
};

// Fails samples whose label is below `bound`.
class FailBelow : public Transform {
 public:
  explicit FailBelow(int64_t bound) : bound_(bound) {}
  DType dtype() const override { return DType::kUint8; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput& in, uint8_t* slot) const override {
    int64_t label;
    std::memcpy(&label, in.record.data + 4, sizeof label);
    *slot = 1;
    return label < bound_ ? corrupt("not a JPEG") : Status::ok();
  }

 private:
  int64_t bound_;
};

// A bytes field's length and first byte, decoded from the record by its schema.
class PayloadOf : public Transform {
 public:
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {2}; }
  Status apply(const SampleInput& in, uint8_t* slot) const override {
    STOKER_ASSIGN_OR_RETURN(ByteSpan payload, variable_field(*in.schema, in.record, 0));
    const int64_t out[2] = {static_cast<int64_t>(payload.size), payload.data[0]};
    std::memcpy(slot, out, sizeof out);
    return Status::ok();
  }
};

// Holds every sample until open(): a batch that cannot be ready before the test says so.
class Gate : public Transform {
 public:
  DType dtype() const override { return DType::kUint8; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput&, uint8_t* slot) const override {
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
    *slot = 1;
    return Status::ok();
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable opened_;
  bool open_ = false;  // guarded by mutex_
};

class LoaderCoreTest : public testing::LoaderFixture {
 protected:
  // Labels (== record index % 1000) of every sample of epoch e, in order; each batch's records
  // (HostBatch::records) are those of its samples, skipped ones left out.
  static std::vector<int64_t> labels(LoaderCore& loader, int64_t e, int64_t max_batches = -1) {
    std::vector<int64_t> out;
    int64_t n = 0;
    LoaderCore::Epoch epoch = loader.epoch(e);
    HostBatch b;
    while (n != max_batches && epoch.next(b)) {
      const auto* l = static_cast<const int64_t*>(b["label"].data);
      EXPECT_EQ(b.records.size(), static_cast<size_t>(b.size));
      for (int64_t k = 0; k < b.size && k < static_cast<int64_t>(b.records.size()); ++k)
        EXPECT_EQ(b.records[k] % 1000, l[k]) << "batch " << b.index << ", sample " << k;
      out.insert(out.end(), l, l + b.size);
      ++n;
    }
    return out;
  }
  // Every byte of every field of epoch e, batch after batch.
  static std::vector<uint8_t> bytes(LoaderCore& loader, int64_t e) {
    std::vector<uint8_t> out;
    LoaderCore::Epoch epoch = loader.epoch(e);
    HostBatch b;
    while (epoch.next(b)) {
      for (size_t f = 0; f < b.fields.size(); ++f) {
        const auto* p = static_cast<const uint8_t*>(b.fields[f].data);
        out.insert(out.end(), p, p + b.size * loader.layout().fields()[f].sample_bytes);
      }
    }
    return out;
  }
};

TEST_F(LoaderCoreTest, BatchesArePlainBuffersOfTheRightShapeAndValue) {
  LoaderCore loader(dataset_, options(2));
  EXPECT_EQ(loader.batches_per_epoch(), (kRecords + 15) / 16);
  int64_t seen = 0;
  LoaderCore::Epoch epoch = loader.epoch(0);
  EXPECT_EQ(epoch.size(), loader.batches_per_epoch());
  HostBatch b;
  while (epoch.next(b)) {
    const HostField& image = b["image"];
    EXPECT_EQ(image.dtype, DType::kFloat32);
    EXPECT_EQ(image.shape, (std::vector<int64_t>{b.size, 1, 2, 2}));
    EXPECT_EQ(image.strides, (std::vector<int64_t>{4, 4, 2, 1}));
    EXPECT_EQ(b["label"].shape, (std::vector<int64_t>{b.size}));
    const auto* px = static_cast<const float*>(image.data);
    const auto* l = static_cast<const int64_t*>(b["label"].data);
    for (int64_t k = 0; k < b.size; ++k) {
      // Pixel p of record i is (i*4+p) mod 256 and its label i mod 1000 (i < 1003).
      const bool matches =
          std::abs(px[4 * k] - ((l[k] * 4 % 256) / 255.0f - 0.5f) / 0.5f) < 1e-5 ||
          std::abs(px[4 * k] - (((l[k] + 1000) * 4 % 256) / 255.0f - 0.5f) / 0.5f) < 1e-5;
      EXPECT_TRUE(matches) << l[k];
    }
    seen += b.size;
    EXPECT_THROW(b["nope"], Error);
  }
  EXPECT_EQ(seen, kRecords);
}

TEST_F(LoaderCoreTest, SameBytesForAnyWorkerCountAndPrefetch) {
  LoaderCore reference(dataset_, options(0));
  const auto expected = bytes(reference, 3);
  for (int workers : {0, 1, 2, 3, 8}) {
    for (int prefetch : {1, 2, 5}) {
      LoaderOptions o = options(workers);
      o.prefetch = prefetch;
      LoaderCore loader(dataset_, o);
      EXPECT_EQ(bytes(loader, 3), expected) << workers << " " << prefetch;
    }
  }
  LoaderCore other(dataset_, options(2));
  EXPECT_NE(bytes(other, 4), expected);
}

TEST_F(LoaderCoreTest, ExactlyOnceAcrossRanksAndEpochsInSequence) {
  for (int workers : {0, 2}) {
    for (int world : {1, 2, 3}) {
      for (int64_t e = 0; e < 3; ++e) {
        std::multiset<int64_t> seen;
        for (int rank = 0; rank < world; ++rank) {
          LoaderCore loader(dataset_, options(workers, rank, world));
          for (int64_t prior = 0; prior < e; ++prior) labels(loader, prior);  // epochs in turn
          for (int64_t l : labels(loader, e)) seen.insert(l);
        }
        // Labels are i % 1000: 0, 1, 2 stand for two records; padding repeats < world samples.
        EXPECT_GE(seen.size(), static_cast<size_t>(kRecords));
        EXPECT_LT(seen.size(), static_cast<size_t>(kRecords + world));
        for (int64_t l = 0; l < 1000; ++l) EXPECT_GE(seen.count(l), l < 3 ? 2u : 1u) << l;
      }
    }
  }
}

// LastBatch::kPad: every batch is full, its padding counted at its end; the samples before the
// padding are each record once across the ranks.
TEST_F(LoaderCoreTest, PaddedBatchesAreFullAndCountTheirPadding) {
  for (int workers : {0, 2}) {
    for (int world : {1, 2, 3}) {
      std::multiset<int64_t> unpadded;
      int64_t padding = 0;
      for (int rank = 0; rank < world; ++rank) {
        LoaderOptions o = options(workers, rank, world);
        o.last_batch = LastBatch::kPad;
        LoaderCore loader(dataset_, o);
        LoaderCore::Epoch epoch = loader.epoch(1);
        HostBatch b;
        while (epoch.next(b)) {
          ASSERT_EQ(b.size, 16);
          const auto* l = static_cast<const int64_t*>(b["label"].data);
          unpadded.insert(l, l + b.size - b.padding);
          padding += b.padding;
        }
      }
      SCOPED_TRACE(::testing::Message() << "workers " << workers << ", world " << world);
      EXPECT_EQ(static_cast<int64_t>(unpadded.size()), kRecords);
      EXPECT_EQ(padding, (kRecords + 16 * world - 1) / (16 * world) * 16 * world - kRecords);
      for (int64_t l = 0; l < 1000; ++l) EXPECT_EQ(unpadded.count(l), l < 3 ? 2u : 1u) << l;
    }
  }
}

// A padding sample skipped as bad is no longer padding: the count stays the batch's tail.
TEST_F(LoaderCoreTest, ASkippedPaddingSampleLeavesThePaddingCount) {
  // Two ranks in dataset order: position 1003, rank 1's last, repeats record 0 (label 0).
  for (bool fail : {false, true}) {
    LoaderOptions o = options(0, 1, 2);
    o.shuffle = false;
    o.on_error = ErrorPolicy::kSkip;
    if (fail) o.fields.push_back({"check", std::make_shared<FailOn>(0, FailOn::kStatus)});
    LoaderCore loader(dataset_, o);
    LoaderCore::Epoch epoch = loader.epoch(0);
    HostBatch b, last;
    int64_t padded_batches = 0;
    while (epoch.next(b)) {
      padded_batches += b.padding > 0;
      last = b;
    }
    const auto* l = static_cast<const int64_t*>(last["label"].data);
    EXPECT_EQ(last.padding, fail ? 0 : 1);
    EXPECT_EQ(last.skipped, fail ? 1 : 0);
    EXPECT_EQ(l[last.size - 1], fail ? 1 : 0);  // record 1001 (label 1), else the padding
    EXPECT_EQ(padded_batches, fail ? 0 : 1);
  }
}

TEST_F(LoaderCoreTest, StateAndRestoreContinueByteIdentical) {
  for (int workers : {0, 2}) {
    LoaderCore full(dataset_, options(workers));
    const auto all = labels(full, 1);

    LoaderCore first(dataset_, options(workers));
    labels(first, 1, 20);
    const LoaderState state = first.state();
    EXPECT_EQ(state.epoch, 1);
    EXPECT_EQ(state.position, 20 * 16);

    LoaderCore second(dataset_, options(workers));
    second.restore(state);
    const auto rest = labels(second, 1);
    EXPECT_EQ(rest, std::vector<int64_t>(all.begin() + 20 * 16, all.end()));
    EXPECT_EQ(second.state().epoch, 2);
    EXPECT_EQ(second.state().position, 0);
    // The same loader restored mid-way back: work built ahead for epoch 2 is dropped.
    second.restore(state);
    EXPECT_EQ(labels(second, 1), rest);
  }
}

TEST_F(LoaderCoreTest, ElasticRestoreTwoToThreeRanksCoversTheRestExactlyOnce) {
  for (int workers : {0, 2}) {
    std::multiset<int64_t> seen;
    LoaderState state;
    for (int rank = 0; rank < 2; ++rank) {
      LoaderCore loader(dataset_, options(workers, rank, 2));
      for (int64_t l : labels(loader, 0, 10)) seen.insert(l);
      if (rank == 0) state = loader.state();
    }
    EXPECT_EQ(state.position, 10 * 16 * 2);
    for (int rank = 0; rank < 3; ++rank) {
      LoaderCore loader(dataset_, options(workers, rank, 3));
      loader.restore(state);
      for (int64_t l : labels(loader, 0)) seen.insert(l);
    }
    for (int64_t l = 0; l < 1000; ++l) {
      const size_t expected = l < 3 ? 2 : 1;
      EXPECT_GE(seen.count(l), expected) << l;
      EXPECT_LE(seen.count(l), expected + 1) << l;  // padding: < world_size repeats
    }
    EXPECT_LE(seen.size(), static_cast<size_t>(kRecords + 2));
  }
}

// A shuffle window orders the batches by the dataset's shards (sampler.h), and a state resumes
// only a loader of the same window: another one would continue another order.
TEST_F(LoaderCoreTest, AShuffleWindowDeliversItsOrderAndRestoresOnlyIntoItself) {
  std::vector<int64_t> shard_records;
  for (const ShardInfo& shard : dataset_->manifest().shards)
    shard_records.push_back(static_cast<int64_t>(shard.records));
  ASSERT_GT(shard_records.size(), 4u);
  for (int workers : {0, 2}) {
    LoaderOptions windowed = options(workers);
    windowed.shuffle_window = 2;
    SamplerOptions order_options;
    order_options.seed = windowed.seed;
    order_options.shuffle_window = 2;
    std::vector<int64_t> expected;
    for (int64_t i : Sampler(shard_records, order_options).order(1)) expected.push_back(i % 1000);
    LoaderCore loader(dataset_, windowed);
    const std::vector<int64_t> all = labels(loader, 1);
    EXPECT_EQ(all, expected);
    EXPECT_NE(all, labels(*std::make_unique<LoaderCore>(dataset_, options(workers)), 1));

    LoaderCore first(dataset_, windowed);
    labels(first, 1, 10);
    const LoaderState state = first.state();
    EXPECT_EQ(state.shuffle_window, 2);
    LoaderCore global(dataset_, options(workers));
    try {
      global.restore(state);
      ADD_FAILURE() << "restored a window-2 state into a global shuffle";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(),
                   "cannot restore a loader state of shuffle window 2 into a loader of shuffle "
                   "window all");
    }
    LoaderCore second(dataset_, windowed);
    second.restore(state);
    EXPECT_EQ(labels(second, 1), std::vector<int64_t>(all.begin() + 10 * 16, all.end()));
  }
}

TEST_F(LoaderCoreTest, TimedWaitReturnsWhileABatchIsBuiltThenTakesItUp) {
  const auto gate = std::make_shared<Gate>();
  LoaderOptions o = options(2);
  o.fields = {{"label"}, {"gate", gate}};
  LoaderCore loader(dataset_, o);
  // Declared after the loader, so destroyed first: the workers are never left waiting.
  struct Opener {
    Gate& gate;
    ~Opener() { gate.open(); }
  } opener{*gate};
  LoaderCore::Epoch epoch = loader.epoch(0);
  HostBatch b;
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_EQ(epoch.next_for(b, std::chrono::milliseconds(2)), LoaderCore::Epoch::Next::kTimedOut);
    EXPECT_EQ(b.owner, nullptr);
    EXPECT_EQ(loader.state().position, 0);
  }
  // Only this thread waits, so the engine's total wait is the timed-out attempts' so far.
  const int64_t timed_out_wait = loader.stats().wait_ns;
  EXPECT_GT(timed_out_wait, 0);
  gate->open();
  std::vector<int64_t> seen;
  int64_t first_batch_wait = 0;
  LoaderCore::Epoch::Next next;
  while ((next = epoch.next_for(b, std::chrono::seconds(30))) == LoaderCore::Epoch::Next::kBatch) {
    if (seen.empty()) first_batch_wait = loader.stats().wait_ns;
    EXPECT_EQ(b.index, static_cast<int64_t>(seen.size()) / 16);
    const auto* l = static_cast<const int64_t*>(b["label"].data);
    seen.insert(seen.end(), l, l + b.size);
  }
  EXPECT_EQ(next, LoaderCore::Epoch::Next::kEnd);
  LoaderCore reference(dataset_, options(0));
  EXPECT_EQ(seen, labels(reference, 0));
  EXPECT_EQ(loader.state().epoch, 1);
  // The first batch's wait counts the timed-out attempts too: all of the wait up to it. (Not
  // 2 x 2 ms: the deadline starts before the engine does, which under a sanitizer may be most
  // of it.)
  ASSERT_EQ(loader.stats().epoch_start_wait_ns.size(), 1u);
  EXPECT_GE(first_batch_wait, timed_out_wait);
  EXPECT_EQ(loader.stats().epoch_start_wait_ns[0], first_batch_wait);
}

TEST_F(LoaderCoreTest, TimedWaitInlineBuildsAndNeverTimesOut) {
  LoaderCore loader(dataset_, options(0));
  LoaderCore reference(dataset_, options(0));
  LoaderCore::Epoch epoch = loader.epoch(0);
  HostBatch b;
  std::vector<int64_t> seen;
  while (epoch.next_for(b, std::chrono::nanoseconds(0)) == LoaderCore::Epoch::Next::kBatch) {
    const auto* l = static_cast<const int64_t*>(b["label"].data);
    seen.insert(seen.end(), l, l + b.size);
  }
  EXPECT_EQ(seen, labels(reference, 0));
}

TEST_F(LoaderCoreTest, TransformsSeeTheRecordIndexEpochAndTheirOwnRandomStream) {
  LoaderOptions o = options(0);
  o.fields = {{"echo", std::make_shared<EchoInput>()}};
  LoaderCore reference(dataset_, o);
  const auto expected = bytes(reference, 2);
  for (int workers : {1, 3}) {
    o.workers = workers;
    LoaderCore loader(dataset_, o);
    EXPECT_EQ(bytes(loader, 2), expected) << workers;
  }
  const size_t record_bytes = dataset_->schema().min_record_bytes();
  for (size_t k = 0; k < expected.size() / 24; ++k) {
    int64_t v[3];
    std::memcpy(v, expected.data() + 24 * k, sizeof v);
    EXPECT_EQ(static_cast<uint64_t>(v[0]), CounterRng(5, sample_stream(2, v[1])).next_u64());
    EXPECT_EQ(static_cast<size_t>(v[2]), record_bytes);
  }
}

// Repeated augmentation: each sample comes ra_reps times in a row, each repeat drawing from its
// own stream (rng.h), the same bytes for any workers; a state restores only into the same ra_reps.
TEST_F(LoaderCoreTest, RepeatedSamplesDrawTheirOwnAugmentationAndRestoreOnlyIntoTheirReps) {
  LoaderOptions o = options(0);
  o.ra_reps = 3;
  o.fields = {{"echo", std::make_shared<EchoInput>()}};
  LoaderCore reference(dataset_, o);
  const auto expected = bytes(reference, 2);
  ASSERT_EQ(expected.size(), 24u * kRecords);
  for (int workers : {1, 3}) {
    o.workers = workers;
    LoaderCore loader(dataset_, o);
    EXPECT_EQ(bytes(loader, 2), expected) << workers;
  }
  for (size_t k = 0; k + 3 <= expected.size() / 24; k += 3) {
    int64_t v[3][3];
    std::memcpy(v, expected.data() + 24 * k, sizeof v);
    for (int64_t r = 0; r < 3; ++r) {
      ASSERT_EQ(v[r][1], v[0][1]) << "position " << k + r << " is not a repeat";
      EXPECT_EQ(static_cast<uint64_t>(v[r][0]),
                CounterRng(5, sample_stream(2, v[r][1], r)).next_u64());
    }
    EXPECT_NE(v[0][0], v[1][0]);
    EXPECT_NE(v[1][0], v[2][0]);
  }
  LoaderCore first(dataset_, o);
  first.restore({5, 2, 9, kShuffleAll, 3});
  try {
    LoaderCore other(dataset_, options(0));
    other.restore(first.state());
    ADD_FAILURE() << "restored an ra_reps 3 state into a loader of ra_reps 1";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "cannot restore a loader state of ra_reps 3 into a loader of ra_reps 1");
  }
}

TEST_F(LoaderCoreTest, FailedTransformsRaiseNamingTheRecordOrAreSkipped) {
  // Label 700 is record 700 only. Every way of failing, every policy, several worker counts.
  for (auto how : {FailOn::kStatus, FailOn::kThrowStd, FailOn::kThrowInt}) {
    for (int workers : {0, 1, 3}) {
      LoaderOptions o = options(workers);
      o.fields = {{"label"}, {"check", std::make_shared<FailOn>(700, how)}};
      LoaderCore loader(dataset_, o);
      try {
        labels(loader, 0);
        FAIL() << "no error";
      } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("dataset record 700"), std::string::npos) << what;
        EXPECT_NE(what.find("field 'check'"), std::string::npos) << what;
        EXPECT_NE(what.find("shard-"), std::string::npos) << what;
      }
      // The workers survived: the next epoch runs (and fails at the same record again).
      EXPECT_THROW(labels(loader, 1), Error);

      o.on_error = ErrorPolicy::kSkip;
      LoaderCore skipping(dataset_, o);
      std::vector<int64_t> got = labels(skipping, 0);
      EXPECT_EQ(got.size(), static_cast<size_t>(kRecords - 1));
      EXPECT_EQ(std::count(got.begin(), got.end(), 700), 0);
      EXPECT_EQ(skipping.stats().skipped.load(), 1);
      // The survivors keep their planned order.
      LoaderOptions plain = options(0);
      LoaderCore reference(dataset_, plain);
      std::vector<int64_t> expected = labels(reference, 0);
      expected.erase(std::find(expected.begin(), expected.end(), 700));
      EXPECT_EQ(got, expected);
    }
  }
}

// The Python loader's rule (python/tests/test_loader.py), for the C++ trainer's loader too.
TEST_F(LoaderCoreTest, SkipLeavesOutABatchOfBadRecordsNeverAnEmptyOne) {
  // `o` unshuffled under the skip policy, the records of labels below `bound` bad.
  auto skipping = [](LoaderOptions o, int64_t bound) {
    o.shuffle = false;
    o.on_error = ErrorPolicy::kSkip;
    o.fields = {{"label"}, {"check", std::make_shared<FailBelow>(bound)}};
    return o;
  };
  // Epoch 0's error so.
  auto error_of = [&](const LoaderOptions& o, int64_t bound) -> std::string {
    LoaderCore loader(dataset_, skipping(o, bound));
    try {
      labels(loader, 0);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  for (int workers : {0, 2}) {
    LoaderCore loader(dataset_, skipping(options(workers), 32));  // batches 0 and 1 bad
    for (const bool timed : {false, true}) {
      LoaderCore::Epoch epoch = loader.epoch(timed);
      std::vector<int64_t> indices;
      HostBatch b;
      while (timed ? epoch.next_for(b, std::chrono::seconds(600)) == LoaderCore::Epoch::Next::kBatch
                   : epoch.next(b)) {
        EXPECT_GT(b.size, 0) << "batch " << b.index;
        indices.push_back(b.index);
      }
      ASSERT_EQ(indices.size(), 61u);  // of 63: 2 left out
      EXPECT_EQ(indices.front(), 2);
      EXPECT_EQ(loader.state().epoch, timed + 1);  // the epoch went past them, to its end
    }
    // Every record bad: one line naming the dataset, at the end of the epoch.
    EXPECT_EQ(error_of(options(workers), 1000),
              "on_error='skip': no record of epoch 0 of " + dataset_->dir() +
                  " was good in its first 63 batches (all left out): check the data "
                  "(on_error='raise' names the first bad record and why)");
    // One of two ranks leaving a batch out would have its peer wait for it.
    const std::string ranked = error_of(options(workers, 0, 2), 32);
    EXPECT_EQ(
        ranked.find("on_error='skip': every record of batch 0 of epoch 0 of " + dataset_->dir() +
                    " on rank 0 was bad, and leaving the batch out would give this rank "
                    "fewer batches than its 1 peers"),
        0u)
        << ranked;
  }
}

TEST_F(LoaderCoreTest, CorruptRecordRaisesNamingItOrIsSkipped) {
  auto [shard, offset] = testing::record_location(dir_ / "ds", 400);
  testing::flip_byte(shard, offset);
  dataset_ = Dataset::open(dir_ / "ds").value_or_throw();
  for (int workers : {0, 2}) {
    LoaderCore loader(dataset_, options(workers));
    try {
      labels(loader, 0);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dataset record 400"), std::string::npos) << e.what();
    }
    LoaderOptions skip = options(workers);
    skip.on_error = ErrorPolicy::kSkip;
    LoaderCore skipping(dataset_, skip);
    EXPECT_EQ(labels(skipping, 0).size(), static_cast<size_t>(kRecords - 1));
    EXPECT_EQ(skipping.stats().skipped.load(), 1);
  }
}

// A shard truncated under a running loader (the SIGBUS handler installed, as the command and
// the Python package do): the batches that read it fail with an error naming the shard and the
// record, under either error policy, whatever the worker count and verify policy; the process
// lives on, and so does the loader (its later epochs fail the same way).
TEST_F(LoaderCoreTest, AShardTruncatedWhileLoadingFailsNamingTheShard) {
  install_mapped_read_fault_handler();
  const std::string shard = testing::record_location(dir_ / "ds", 500).first;
  bool truncated = false;
  for (int workers : {0, 2}) {
    for (ErrorPolicy policy : {ErrorPolicy::kRaise, ErrorPolicy::kSkip}) {
      for (VerifyPolicy verify : {VerifyPolicy::kAlways, VerifyPolicy::kOff}) {
        LoaderOptions o = options(workers);
        o.on_error = policy;
        o.verify = verify;
        LoaderCore loader(dataset_, o);
        try {
          LoaderCore::Epoch epoch = loader.epoch(0);
          HostBatch b;
          ASSERT_TRUE(epoch.next(b));
          if (!truncated) {  // later loaders find the shard's mapping already marked changed
            ASSERT_EQ(::truncate(shard.c_str(), 0), 0);
            truncated = true;
          }
          while (epoch.next(b)) {
          }
          FAIL() << "no error";
        } catch (const Error& e) {
          const std::string what = e.what();
          EXPECT_EQ(e.status().code(), StatusCode::kIoError);
          EXPECT_EQ(what.find(shard + ": record "), 0u) << what;
          EXPECT_NE(what.find(kChangedSizeText), std::string::npos) << what;
          EXPECT_NE(what.find("(dataset record "), std::string::npos) << what;
        }
        EXPECT_THROW(labels(loader, 1), Error);
      }
    }
  }
}

TEST_F(LoaderCoreTest, OneLiveEpochAtATime) {
  for (int workers : {0, 2}) {
    LoaderCore loader(dataset_, options(workers));
    {
      LoaderCore::Epoch first = loader.epoch(0);
      EXPECT_THROW(loader.epoch(0), Error);
      EXPECT_THROW(loader.epoch(1), Error);
      EXPECT_THROW(loader.restore({5, 0, 0}), Error);
      LoaderCore::Epoch moved = std::move(first);
      EXPECT_THROW(loader.epoch(1), Error);
    }
    EXPECT_EQ(labels(loader, 0).size(), static_cast<size_t>(kRecords));
    EXPECT_THROW(loader.epoch(-1), Error);
  }
}

// An epoch's start whose order build is cancelled (Ctrl-C from Python: util/cancel_scope.h)
// throws kCancelled and changes nothing: the same start then delivers the epoch, also where
// the workers had built it ahead behind the last one.
TEST_F(LoaderCoreTest, ACancelledEpochStartChangesNothing) {
  for (int workers : {0, 2}) {
    LoaderCore fresh(dataset_, options(workers));
    const auto zero = labels(fresh, 0);
    const auto one = labels(fresh, 1);
    LoaderCore loader(dataset_, options(workers));
    const std::function<bool()> cancelled = [] { return true; };
    for (const int64_t e : {0, 1}) {
      try {
        CancelScope scope(&cancelled);
        loader.epoch(e);
        ADD_FAILURE() << "epoch " << e << " started under a cancel, workers " << workers;
      } catch (const Error& error) {
        EXPECT_EQ(error.status().code(), StatusCode::kCancelled) << error.what();
      }
      EXPECT_EQ(loader.state().epoch, e);
      EXPECT_EQ(loader.state().position, 0);
      EXPECT_EQ(labels(loader, e), e == 0 ? zero : one) << "workers " << workers;
    }
  }
}

TEST_F(LoaderCoreTest, EpochsAreNumberedFromZeroToTheLargest) {
  for (int workers : {0, 2}) {
    LoaderCore loader(dataset_, options(workers));
    for (int64_t bad : {int64_t{-1}, kMaxEpoch + 1}) {
      try {
        loader.epoch(bad);
        ADD_FAILURE() << "epoch " << bad << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(std::string(e.what()).find("epoch must be in [0, " + std::to_string(kMaxEpoch) +
                                             "], not " + std::to_string(bad)),
                  std::string::npos)
            << e.what();
      }
      EXPECT_THROW(loader.restore({loader.state().seed, bad, 0}), Error);
    }
    // The largest epoch iterates whole (the engine plans the one after it too).
    EXPECT_EQ(labels(loader, kMaxEpoch).size(), static_cast<size_t>(kRecords));
    loader.restore({loader.state().seed, kMaxEpoch, 0});
    EXPECT_EQ(labels(loader, kMaxEpoch).size(), static_cast<size_t>(kRecords));
  }
}

TEST_F(LoaderCoreTest, WorkersBuildTheNextEpochWhileTheConsumerFinishesThisOne) {
  LoaderCore loader(dataset_, options(2));
  const int64_t per_epoch = loader.batches_per_epoch();
  labels(loader, 0);
  // Without a call for epoch 1, the pool builds its first batches (up to the window).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (loader.stats().batches.load() < per_epoch + 3 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(loader.stats().batches.load(), per_epoch + 3);  // exactly the window of 3
  const int64_t before = loader.stats().batches.load();
  EXPECT_EQ(labels(loader, 1).size(), static_cast<size_t>(kRecords));
  // Kept, not rebuilt: epoch 1 cost its own batches plus epoch 2's window, no more.
  EXPECT_LE(loader.stats().batches.load(), before + per_epoch - 3 + 3);
}

TEST_F(LoaderCoreTest, BadOptionsAreRejected) {
  // The one check of the options (the engine and the sampler assume it): the message.
  auto rejection = [&](LoaderOptions o) -> std::string {
    try {
      LoaderCore loader(dataset_, o);
    } catch (const Error& e) {
      if (e.status().code() == StatusCode::kInvalidArgument) return e.what();
      return "another code: " + std::string(e.what());
    }
    return "accepted";
  };
  auto rejects = [&](LoaderOptions o) { return rejection(std::move(o)) != "accepted"; };
  auto says = [&](const LoaderOptions& o, const std::string& message) {
    const std::string got = rejection(o);
    EXPECT_NE(got.find(message), std::string::npos) << got;
  };
  LoaderOptions o = options(1);
  o.fields = {{"missing"}};
  EXPECT_TRUE(rejects(o));
  const std::pair<int, std::string> prefetches[] = {
      {0, "prefetch must be at least 1, not 0"},
      {-2, "prefetch must be at least 1 (or -1: auto), not -2"},
      {kMaxPrefetch + 1, "prefetch must be at most 4096, not 4097"}};
  for (const auto& [prefetch, message] : prefetches) {
    o = options(1);
    o.prefetch = prefetch;
    says(o, message);
  }
  const std::pair<int, std::string> workers[] = {
      {-1, "workers must be at least 0, not -1"},
      {kMaxWorkers + 1, "workers must be at most 1024, not 1025"}};
  for (const auto& [count, message] : workers) {
    o = options(1);
    o.workers = count;
    says(o, message);
  }
  for (int64_t reps : {int64_t{0}, kMaxRaReps + 1}) {
    o = options(1);
    o.ra_reps = reps;
    says(o, "ra_reps must be from 1 to 256, not " + std::to_string(reps));
  }
  for (int budget : {-1, kMaxWorkers + 1}) {
    o = options(WorkerCount::tuned());
    o.tune.max_workers = budget;
    EXPECT_TRUE(rejects(o)) << budget;
    o.tune.max_workers = 0;
    o.tune.start_workers = budget;
    EXPECT_TRUE(rejects(o)) << budget;
  }
  o = options(1);
  o.last_batch = LastBatch::kPad;
  o.on_error = ErrorPolicy::kSkip;
  says(o, "last_batch 'pad' promises full batches, which on_error 'skip' would shorten");
  for (int64_t batch : {int64_t{0}, int64_t{-1}}) {
    o = options(1);
    o.batch_size = batch;
    says(o, "batch_size must be at least 1, not " + std::to_string(batch));
  }
  o = options(1);
  o.batch_size = int64_t{1} << 60;
  says(o, "more than the 16 GiB a batch buffer may take");
  const std::tuple<int, int, std::string> ranks[] = {
      {2, 2, "rank must be in [0, 1], not 2"},
      {-1, 2, "rank must be in [0, 1], not -1"},
      {0, 0, "world_size must be at least 1, not 0"}};
  for (const auto& [rank, world_size, message] : ranks) {
    o = options(1);
    o.rank = rank;
    o.world_size = world_size;
    says(o, message);
  }
  o = options(1);
  o.fields = {{"label"}, {"label"}};
  EXPECT_TRUE(rejects(o));
  LoaderCore loader(dataset_, options(1));
  EXPECT_THROW(loader.restore({99, 0, 0}), Error);
  EXPECT_THROW(loader.restore({5, -1, 0}), Error);
}

TEST_F(LoaderCoreTest, VariableSizeBytesFieldsAreReadByTransforms) {
  const Schema schema = Schema::create({{"jpeg", DType::kBytes, {}}}).value_or_throw();
  RecordEncoder encoder(schema);
  std::vector<std::vector<uint8_t>> records;
  for (int i = 0; i < 10; ++i) {
    const std::vector<uint8_t> payload(i + 1, static_cast<uint8_t>(i * 3));
    throw_if_error(encoder.set_bytes(0, payload.data(), payload.size()));
    records.push_back(encoder.encode());
  }
  testing::write_dataset(dir_ / "bytes", schema, records);
  auto dataset = Dataset::open(dir_ / "bytes").value_or_throw();
  EXPECT_THROW(LoaderCore(dataset, LoaderOptions{}), Error);
  LoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  o.workers = 2;
  o.fields = {{"echo", std::make_shared<EchoInput>()}, {"payload", std::make_shared<PayloadOf>()}};
  LoaderCore loader(dataset, o);
  LoaderCore::Epoch epoch = loader.epoch(0);
  HostBatch b;
  int64_t i = 0;
  while (epoch.next(b)) {
    const auto* v = static_cast<const int64_t*>(b["echo"].data);
    const auto* p = static_cast<const int64_t*>(b["payload"].data);
    for (int64_t k = 0; k < b.size; ++k, ++i) {
      EXPECT_EQ(v[3 * k + 1], i);
      EXPECT_EQ(v[3 * k + 2], 4 + (i + 1));  // no fixed part, a u32 length, the payload
      EXPECT_EQ(p[2 * k], i + 1);
      EXPECT_EQ(p[2 * k + 1], i * 3);
    }
  }
  EXPECT_EQ(i, 10);
}

TEST_F(LoaderCoreTest, PiecesOfOneBatchLandInTheirSlotsAtPrefetchOne) {
  // A batch's samples are split among workers: with prefetch 1 both workers build pieces of
  // the one batch in flight. Checked by content (every sample index lands in its slot); how
  // busy the workers are is `bench loader --prefetch 1 --sample-cost-us N`'s business.
  LoaderOptions o = options(2);
  o.prefetch = 1;
  o.shuffle = false;
  o.fields = {{kSampleCostField, busy_wait_transform(std::chrono::microseconds(20))}};
  LoaderCore loader(dataset_, o);
  LoaderCore::Epoch epoch = loader.epoch(0);
  HostBatch b;
  int64_t i = 0;
  while (epoch.next(b)) {
    const auto* v = static_cast<const int64_t*>(b.fields[0].data);
    for (int64_t k = 0; k < b.size; ++k) EXPECT_EQ(v[k], i++);
  }
  EXPECT_EQ(i, kRecords);
  EXPECT_GT(loader.stats().busy_ns.load(), 0);
}

TEST(AutoPrefetchTest, FillsSixteenMebibytesWithinFourToSixtyFourBatches) {
  EXPECT_EQ(auto_prefetch(64 * 3144), 64);     // Fashion-MNIST float32, batch 64: capped
  EXPECT_EQ(auto_prefetch(256 * 3144), 20);    // the same, batch 256
  EXPECT_EQ(auto_prefetch(2u << 20), 8);       // 2 MiB batches
  EXPECT_EQ(auto_prefetch(256u * 150528), 4);  // ImageNet-sized uint8, batch 256
  EXPECT_EQ(auto_prefetch(0), 64);
}

TEST(AutoPrefetchTest, ItsBuffersTakeAtMostHalfTheMemory) {
  EXPECT_EQ(prefetch_within_memory(size_t{1} << 30, uint64_t{16} << 30), 6);  // 8 of 1 GiB
  EXPECT_EQ(prefetch_within_memory(size_t{3} << 30, uint64_t{16} << 30), 1);  // never below 1
  EXPECT_EQ(prefetch_within_memory(size_t{1} << 20, uint64_t{1} << 40), kMaxPrefetch);
  EXPECT_EQ(prefetch_within_memory(size_t{1} << 30, 0), kMaxPrefetch);  // memory unknown
}

// A sample of `bytes` bytes of which only the first is written: a huge clip's slot, its pages
// untouched (the buffers' memory is virtual but for a page a sample).
class HugeSample : public Transform {
 public:
  explicit HugeSample(int64_t bytes) : bytes_(bytes) {}
  DType dtype() const override { return DType::kUint8; }
  std::vector<int64_t> sample_shape() const override { return {bytes_}; }
  Status apply(const SampleInput&, uint8_t* slot) const override {
    *slot = 1;
    return Status::ok();
  }

 private:
  int64_t bytes_;
};

// Batches of an eighth of the machine's memory (at most 4 GiB; long clips of large frames): an
// auto prefetch keeps their buffers within half of it, which the pool's bytes never pass while
// an epoch is read.
TEST_F(LoaderCoreTest, AnAutoPrefetchOfHugeBatchesStaysWithinHalfTheMemory) {
  const uint64_t memory = machine_memory_bytes();
  if (memory == 0) GTEST_SKIP() << "the machine's memory is unknown";
  const size_t batch = std::min<uint64_t>(memory / 8, uint64_t{4} << 30) / 2 * 2;
  LoaderOptions o = options(2);
  o.batch_size = 2;
  o.fields = {{"clip", std::make_shared<HugeSample>(static_cast<int64_t>(batch / 2))}};
  o.prefetch = kAutoPrefetch;
  LoaderCore loader(dataset_, o);
  const int depth = loader.options().prefetch;
  EXPECT_EQ(depth, std::min(auto_prefetch(batch), prefetch_within_memory(batch, memory)));
  EXPECT_LE((depth + 2) * batch, memory / 2);
  {
    LoaderCore::Epoch epoch = loader.epoch(0);
    HostBatch b;
    for (int i = 0; i < 20 && epoch.next(b); ++i)
      EXPECT_LE(loader.buffer_bytes(), (depth + 2) * batch) << "batch " << i;
  }
}

TEST_F(LoaderCoreTest, AutoPrefetchIsResolvedFromTheBatchSize) {
  LoaderOptions o = options(1);
  o.prefetch = kAutoPrefetch;
  LoaderCore loader(dataset_, o);
  EXPECT_EQ(loader.options().prefetch,
            auto_prefetch(loader.layout().sample_bytes() * static_cast<size_t>(o.batch_size)));
}

// Pipeline spans by thread name and span name.
std::map<std::string, std::map<std::string, int>> span_counts(const Tracer& tracer) {
  std::map<std::string, std::map<std::string, int>> out;
  for (const ThreadTrace& thread : tracer.snapshot()) {
    for (const TraceEvent& e : thread.events) {
      EXPECT_STREQ(e.category, "pipeline");
      if (e.kind == TraceEvent::Kind::kSpan) ++out[thread.name][e.name];
    }
  }
  return out;
}

// The values of pipeline counter `name`, by thread name.
std::map<std::string, std::vector<double>> counter_values(const Tracer& tracer,
                                                          const std::string& name) {
  std::map<std::string, std::vector<double>> out;
  for (const ThreadTrace& thread : tracer.snapshot()) {
    for (const TraceEvent& e : thread.events) {
      if (e.kind == TraceEvent::Kind::kCounter && e.name == name)
        out[thread.name].push_back(e.value);
    }
  }
  return out;
}

TEST_F(LoaderCoreTest, TracedInlineBuildsEachBatchOnTheConsumerThread) {
  Tracer tracer;
  LoaderOptions o = options(0);
  o.tracer = &tracer;
  LoaderCore loader(dataset_, o);
  const std::vector<uint8_t> traced = bytes(loader, 0);
  LoaderCore untraced(dataset_, options(0));
  EXPECT_EQ(traced, bytes(untraced, 0));
  std::vector<ThreadTrace> threads = tracer.snapshot();
  ASSERT_EQ(threads.size(), 1u);
  const int batches = static_cast<int>(loader.batches_per_epoch());
  const std::map<std::string, int> counts = span_counts(tracer).begin()->second;
  EXPECT_EQ(counts, (std::map<std::string, int>{
                        {"piece", batches}, {"read", batches}, {"transform", batches}}));
  EXPECT_EQ(stoker::testing::nesting_error(nlohmann::json::parse(chrome_trace_json(tracer))), "");
}

TEST_F(LoaderCoreTest, TracedWorkersBuildPiecesAndTheConsumerWaits) {
  Tracer tracer;
  LoaderOptions o = options(2);
  o.tracer = &tracer;
  o.prefetch = 1;
  // Samples slow enough that the consumer waits for its first batch at least.
  o.fields = {{"label"}, {kSampleCostField, busy_wait_transform(std::chrono::microseconds(50))}};
  LoaderCore loader(dataset_, o);
  const int64_t batches = loader.batches_per_epoch();
  labels(loader, 0);
  auto counts = span_counts(tracer);
  const std::map<std::string, int>& workers = counts["stoker-worker"];
  // Every batch of epoch 0 in two pieces, maybe the next epoch's first ones too.
  EXPECT_GE(workers.at("piece"), 2 * batches);
  EXPECT_EQ(workers.at("read"), workers.at("piece"));
  EXPECT_EQ(workers.at("transform"), workers.at("piece"));
  EXPECT_GE(workers.at("finalize"), batches);
  EXPECT_LE(workers.at("finalize"), workers.at("piece") / 2);
  EXPECT_EQ(workers.count("wait"), 0u);
  counts.erase("stoker-worker");
  ASSERT_EQ(counts.size(), 1u);  // the consumer: waits only
  EXPECT_EQ(counts.begin()->second.size(), 1u);
  EXPECT_GE(counts.begin()->second.at("wait"), 1);
  // The consumer's queue depth after each batch it took: within the window.
  const auto ready = counter_values(tracer, "ready_batches");
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready.count("stoker-worker"), 0u);
  EXPECT_EQ(static_cast<int64_t>(ready.begin()->second.size()), batches);
  for (double v : ready.begin()->second) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, o.prefetch);
  }
  EXPECT_EQ(stoker::testing::nesting_error(nlohmann::json::parse(chrome_trace_json(tracer))), "");
}

TEST_F(LoaderCoreTest, TunedLoaderDeliversTheSameBytesAndSettles) {
  // Samples of 200 us: windows of batches long enough to measure (3.2 ms a batch per worker).
  auto with_cost = [](LoaderOptions o) {
    o.fields.push_back({kSampleCostField, busy_wait_transform(std::chrono::microseconds(200))});
    return o;
  };
  LoaderCore reference(dataset_, with_cost(options(1)));
  std::vector<std::vector<uint8_t>> expected;
  for (int64_t e = 0; e < 4; ++e) expected.push_back(bytes(reference, e));
  EXPECT_FALSE(reference.tuning().has_value());
  for (int start : {1, 3}) {
    LoaderOptions o = with_cost(options(WorkerCount::tuned()));
    o.tune.max_workers = 3;
    o.tune.start_workers = start;
    LoaderCore loader(dataset_, o);
    EXPECT_EQ(loader.options().workers.threads(), 3);  // the pool's size
    EXPECT_EQ(loader.options().prefetch, 3);           // set by hand: not tuned
    // 63 batches an epoch: the tuning spans epochs.
    for (int64_t e = 0; e < 4; ++e) EXPECT_EQ(bytes(loader, e), expected[e]) << start << " " << e;
    const std::optional<TuningReport> r = loader.tuning();
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->settled) << r->reason;
    EXPECT_LE(r->settle_batches, 4 * 63);
    EXPECT_GE(r->workers, 1);
    EXPECT_LE(r->workers, 3);
    EXPECT_EQ(r->prefetch, 3);
    EXPECT_EQ(r->max_workers, 3);
    ASSERT_FALSE(r->trials.empty());
    EXPECT_EQ(r->trials.front().workers, start);
    EXPECT_NE(r->reason, "");
  }
}

TEST_F(LoaderCoreTest, TunedLoaderWithAutoPrefetchHasAMemoryBudget) {
  LoaderOptions o = options(WorkerCount::tuned());
  o.prefetch = kAutoPrefetch;
  o.tune.max_workers = 2;
  const size_t batch_bytes = LoaderCore(dataset_, options(0)).layout().sample_bytes() * 16;
  o.tune.max_prefetch_bytes = 100 * batch_bytes;
  LoaderCore loader(dataset_, o);
  EXPECT_EQ(loader.options().prefetch, 100);
  EXPECT_EQ(loader.tuning()->prefetch, auto_prefetch(batch_bytes));
  // A budget below auto_prefetch's depth does not go below it.
  o.tune.max_prefetch_bytes = 1;
  LoaderCore small(dataset_, o);
  EXPECT_EQ(small.options().prefetch, auto_prefetch(batch_bytes));
}

// The record indices of epoch e's batches (EchoInput's second word), until the epoch ends or a
// batch fails: then *failure is its Status.
std::vector<std::vector<int64_t>> batch_indices(LoaderCore& loader, int64_t e, Status* failure) {
  std::vector<std::vector<int64_t>> out;
  LoaderCore::Epoch epoch = loader.epoch(e);
  HostBatch b;
  try {
    while (epoch.next(b)) {
      const auto* v = static_cast<const int64_t*>(b["echo"].data);
      out.emplace_back();
      for (int64_t k = 0; k < b.size; ++k) out.back().push_back(v[3 * k + 1]);
    }
  } catch (const Error& e) {
    *failure = e.status();
  }
  return out;
}

// Shards that come as a remote dataset's do (testing/slow_shard_source.h: each fetch waits,
// a shard is mapped only while pinned): the same bytes as the directory's, for any worker
// count, over epochs; the wait counted as fetch time and traced as a "fetch" span a piece; no
// pin left held. A local dataset fetches nothing.
TEST_F(LoaderCoreTest, ShardsFromASlowSourceGiveTheLocalBytesAndTheirWaitIsFetchTime) {
  for (int workers : {0, 1, 3}) {
    auto source = testing::SlowShardSource::open(dir_ / "ds", std::chrono::microseconds(50));
    {
      Tracer tracer;
      LoaderOptions o = options(workers);
      o.tracer = &tracer;
      LoaderCore slow(Dataset::open(source).value_or_throw(), o);
      LoaderCore local(dataset_, options(workers));
      for (int64_t e : {0, 1}) EXPECT_EQ(bytes(slow, e), bytes(local, e)) << workers;
      EXPECT_GT(slow.stats().fetch_ns.load(), 0);
      EXPECT_EQ(local.stats().fetch_ns.load(), 0);
      EXPECT_GT(source->acquires(), 0);
      int pieces = 0, fetches = 0;
      for (const auto& [thread, spans] : span_counts(tracer)) {
        if (spans.count("read") == 0) continue;  // the consumer's waits
        pieces += spans.at("read");
        fetches += spans.at("fetch");
      }
      EXPECT_GE(pieces, 2 * slow.batches_per_epoch());
      // Every piece read was fetched; a worker building the next epoch's first piece ahead when
      // the loader goes may have fetched it and then found it cancelled (one a worker at most).
      EXPECT_GE(fetches, pieces);
      EXPECT_LE(fetches, pieces + workers);
    }
    EXPECT_EQ(source->live_pins(), 0);
  }
}

// A shard that cannot be fetched fails the batch that needs it with the source's one-line
// error naming the shard, under either error policy (not a bad sample to skip: the data is not
// there); the batches before it are the directory's; the loader lives on.
TEST_F(LoaderCoreTest, AShardThatCannotBeFetchedFailsItsBatchUnderEitherPolicy) {
  const int bad = dataset_->locate(500).shard;
  for (int workers : {0, 2}) {
    for (ErrorPolicy policy : {ErrorPolicy::kRaise, ErrorPolicy::kSkip}) {
      auto source = testing::SlowShardSource::open(dir_ / "ds", std::chrono::nanoseconds(0), bad);
      LoaderOptions o = options(workers);
      o.on_error = policy;
      o.fields = {{"echo", std::make_shared<EchoInput>()}};
      LoaderCore loader(Dataset::open(source).value_or_throw(), o);
      LoaderCore local(dataset_, o);
      Status failure, none;
      const auto got = batch_indices(loader, 0, &failure);
      auto expected = batch_indices(local, 0, &none);
      ASSERT_TRUE(none.is_ok()) << none.message();
      const auto needs_bad = [&](const std::vector<int64_t>& batch) {
        return std::any_of(batch.begin(), batch.end(),
                           [&](int64_t i) { return dataset_->locate(i).shard == bad; });
      };
      expected.erase(std::find_if(expected.begin(), expected.end(), needs_bad), expected.end());
      EXPECT_EQ(got, expected) << workers;
      EXPECT_EQ(failure.code(), StatusCode::kIoError);
      EXPECT_EQ(failure.message(), source->failure(bad));
      EXPECT_EQ(failure.message().find('\n'), std::string::npos);
      EXPECT_EQ(loader.stats().skipped.load(), 0);
      failure = Status::ok();
      batch_indices(loader, 1, &failure);  // the next epoch fails the same way
      EXPECT_EQ(failure.message(), source->failure(bad));
    }
  }
}

}  // namespace
}  // namespace stoker
