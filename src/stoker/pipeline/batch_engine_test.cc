// BatchEngine: order, determinism over worker counts, errors at the right batch, skip policy,
// bounded buffers and prompt cancellation. workers == 0 is the single-thread variant of each.
#include "stoker/pipeline/batch_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr int64_t kRecords = 1000;

class BatchEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_labelled_dataset(dir_ / "ds", kRecords, 10, /*shard_bytes=*/8192);
    open();
  }
  void open() {
    dataset_ = Dataset::open(dir_ / "ds").value_or_throw();
    layout_ = BatchLayout::create(dataset_->schema(), {{"image", true, {0.5f}, {0.25f}}, {"label"}})
                  .value_or_throw();
  }
  std::unique_ptr<BatchEngine> engine(int workers, EngineOptions options = {}, int64_t batch = 32,
                                      int64_t epoch = 0, int64_t start = 0) {
    SamplerOptions so;
    so.seed = 11;
    so.batch_size = batch;
    options.workers = workers;
    pool_ = BufferPool::create(layout_, batch, options.prefetch + 2, default_host_allocator());
    stats_ = std::make_shared<PipelineStats>();
    return std::make_unique<BatchEngine>(dataset_, layout_, pool_,
                                         Sampler(kRecords, so).plan(epoch, start), options, stats_);
  }
  // Labels of every batch, in delivery order; fails the test on a non-ok batch.
  std::vector<std::vector<int64_t>> drain(BatchEngine& e, std::vector<float>* images = nullptr) {
    std::vector<std::vector<int64_t>> out;
    int64_t expected = 0;
    while (auto b = e.next()) {
      EXPECT_TRUE(b->status.is_ok()) << b->status.message();
      EXPECT_EQ(b->batch, expected++);
      const auto* labels = reinterpret_cast<const int64_t*>(b->fields[1].get());
      out.emplace_back(labels, labels + b->size);
      if (images) {
        const auto* px = reinterpret_cast<const float*>(b->fields[0].get());
        images->insert(images->end(), px, px + 4 * b->size);
      }
    }
    return out;
  }

  testing::TempDir dir_;
  std::shared_ptr<const Dataset> dataset_;
  BatchLayout layout_;
  std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<PipelineStats> stats_;
};

TEST_F(BatchEngineTest, BatchesHoldThePlannedSamplesTransformed) {
  SamplerOptions so;
  so.seed = 11;
  so.batch_size = 32;
  EpochPlan plan = Sampler(kRecords, so).plan(0);
  auto e = engine(2);
  std::vector<float> images;
  auto batches = drain(*e, &images);
  ASSERT_EQ(static_cast<int64_t>(batches.size()), plan.num_batches());
  size_t pixel = 0;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    IndexSpan idx = plan.batch(b);
    ASSERT_EQ(batches[b].size(), idx.size);
    for (size_t k = 0; k < idx.size; ++k) {
      EXPECT_EQ(batches[b][k], idx[k] % 10);
      for (int p = 0; p < 4; ++p, ++pixel) {
        const uint8_t raw = static_cast<uint8_t>(idx[k] * 4 + p);
        ASSERT_NEAR(images[pixel], (raw / 255.0f - 0.5f) / 0.25f, 1e-5);
      }
    }
  }
  EXPECT_EQ(stats_->samples.load(), kRecords);
  EXPECT_EQ(stats_->batches.load(), plan.num_batches());
}

TEST_F(BatchEngineTest, IdenticalForEveryWorkerCountAndRun) {
  std::vector<float> reference_images;
  auto reference = drain(*engine(0), &reference_images);
  for (int workers : {0, 1, 2, 4, 8}) {
    for (int prefetch : {1, 3, 4, 7}) {  // the consumer wakes workers every 1, 1, 2, 3 batches
      EngineOptions options;
      options.prefetch = prefetch;
      std::vector<float> images;
      EXPECT_EQ(drain(*engine(workers, options), &images), reference) << workers;
      EXPECT_EQ(images, reference_images) << workers;
    }
  }
}

TEST_F(BatchEngineTest, ResumeFromAPositionDeliversTheRemainder) {
  auto full = drain(*engine(2));
  SamplerOptions so;
  so.seed = 11;
  so.batch_size = 32;
  const int64_t position = Sampler(kRecords, so).plan(0).global_position_after(9);
  auto rest = drain(*engine(2, {}, 32, 0, position));
  ASSERT_EQ(rest.size(), full.size() - 10);
  for (size_t b = 0; b < rest.size(); ++b) EXPECT_EQ(rest[b], full[b + 10]);
}

class CorruptRecordTest : public BatchEngineTest {
 protected:
  void SetUp() override {
    BatchEngineTest::SetUp();
    auto [shard, offset] = testing::record_location(dir_ / "ds", kBad);
    testing::flip_byte(shard, offset + 1);
    open();
    SamplerOptions so;
    so.seed = 11;
    so.batch_size = 32;
    EpochPlan plan = Sampler(kRecords, so).plan(0);
    for (int64_t b = 0; b < plan.num_batches(); ++b) {
      for (int64_t i : plan.batch(b)) {
        if (i == kBad) bad_batch_ = b;
      }
    }
  }
  static constexpr int64_t kBad = 517;
  int64_t bad_batch_ = -1;
};

TEST_F(CorruptRecordTest, FailsAtTheBatchHoldingItNamingTheRecord) {
  for (int workers : {0, 3}) {
    auto e = engine(workers);
    int64_t b = 0;
    while (auto batch = e->next()) {
      if (b == bad_batch_) {
        EXPECT_EQ(batch->status.code(), StatusCode::kCorrupt);
        EXPECT_NE(batch->status.message().find("dataset record 517"), std::string::npos)
            << batch->status.message();
        EXPECT_NE(batch->status.message().find("shard-"), std::string::npos);
        break;
      }
      EXPECT_TRUE(batch->status.is_ok()) << b;
      ++b;
    }
    EXPECT_EQ(b, bad_batch_);
  }
}

TEST_F(CorruptRecordTest, SkipPolicyCountsAndDeliversTheRest) {
  for (int workers : {0, 3}) {
    EngineOptions options;
    options.skip_errors = true;
    auto e = engine(workers, options);
    int64_t samples = 0;
    while (auto batch = e->next()) {
      ASSERT_TRUE(batch->status.is_ok());
      samples += batch->size;
      EXPECT_EQ(batch->skipped, batch->batch == bad_batch_ ? 1 : 0);
    }
    EXPECT_EQ(samples, kRecords - 1);
    EXPECT_EQ(stats_->skipped.load(), 1);
  }
}

TEST_F(BatchEngineTest, VerifyOnceTrustsRecordsAfterTheirFirstCheck) {
  for (int workers : {0, 2}) {
    const std::string dir = dir_ / ("once" + std::to_string(workers));
    testing::write_labelled_dataset(dir, kRecords);
    auto dataset = Dataset::open(dir).value_or_throw();
    auto verified = std::make_shared<VerifiedSet>(kRecords);
    auto run = [&](VerifyPolicy policy, int64_t epoch) {
      EngineOptions options;
      options.workers = workers;
      options.verify = policy;
      SamplerOptions so;
      so.batch_size = 50;
      auto pool = BufferPool::create(layout_, 50, 4, default_host_allocator());
      BatchEngine e(dataset, layout_, pool, Sampler(kRecords, so).plan(epoch), options,
                    std::make_shared<PipelineStats>(), verified);
      while (auto b = e.next()) {
        if (!b->status.is_ok()) return b->status;
      }
      return Status::ok();
    };
    ASSERT_TRUE(run(VerifyPolicy::kOnce, 0).is_ok());
    for (uint64_t i = 0; i < kRecords; ++i) ASSERT_TRUE(verified->contains(i));
    // The shard is mapped shared: a byte flipped on disk now is seen by the reader.
    auto [shard, offset] = testing::record_location(dir, 123);
    testing::flip_byte(shard, offset);
    EXPECT_TRUE(run(VerifyPolicy::kOnce, 1).is_ok());
    EXPECT_TRUE(run(VerifyPolicy::kOff, 1).is_ok());
    EXPECT_EQ(run(VerifyPolicy::kAlways, 1).code(), StatusCode::kCorrupt);
  }
}

TEST_F(BatchEngineTest, BuffersStayBoundedByPrefetch) {
  for (int workers : {0, 4}) {
    EngineOptions options;
    options.prefetch = 3;
    auto e = engine(workers, options, 8);  // 125 batches
    int64_t n = 0;
    while (auto b = e->next()) ++n;
    EXPECT_EQ(n, 125);
    // In flight: prefetch being built or waiting, plus the one the consumer holds.
    EXPECT_LE(pool_->allocations(), static_cast<size_t>(options.prefetch + 1));
  }
}

TEST_F(BatchEngineTest, DestroyingMidEpochCancelsAndJoinsPromptly) {
  for (int workers : {1, 4, 8}) {
    EngineOptions options;
    options.prefetch = 2;
    auto e = engine(workers, options, 4);
    ASSERT_NE(e->next(), nullptr);
    std::this_thread::sleep_for(
        std::chrono::milliseconds(20));  // workers now wait on a full window
    auto start = std::chrono::steady_clock::now();
    e.reset();
    auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(ms, 100.0) << workers;
  }
}

TEST_F(BatchEngineTest, BatchesOutliveTheirEngineAndPool) {
  std::shared_ptr<BatchBuffer> kept;
  {
    auto e = engine(2);
    kept = e->next();
    pool_.reset();
  }
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->size, 32);
}

}  // namespace
}  // namespace stoker
