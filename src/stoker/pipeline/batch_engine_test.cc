// BatchEngine: what LoaderCore's tests do not reach — verify-once, bounded buffers, prompt
// cancellation, batches outliving the engine. workers == 0 is the single-thread variant.
#include "stoker/pipeline/batch_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "stoker/pipeline/sample_cost.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr int64_t kRecords = 1000;

class BatchEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_labelled_dataset(dir_ / "ds", kRecords, 10, /*shard_bytes=*/8192);
    dataset_ = Dataset::open(dir_ / "ds").value_or_throw();
    layout_ = BatchLayout::create(dataset_->schema(), {{"image", true, {0.5f}, {0.25f}}, {"label"}})
                  .value_or_throw();
  }
  std::unique_ptr<BatchEngine> engine(int workers, EngineOptions options = {}, int64_t batch = 32,
                                      std::shared_ptr<VerifiedSet> verified = nullptr) {
    SamplerOptions so;
    so.seed = 11;
    so.batch_size = batch;
    options.workers = workers;
    pool_ = BufferPool::create(layout_, batch, options.prefetch + 2, default_host_allocator());
    stats_ = std::make_shared<PipelineStats>();
    return std::make_unique<BatchEngine>(dataset_, layout_, pool_, Sampler(kRecords, so), options,
                                         stats_, std::move(verified));
  }
  // Drains the started plan; the first failed batch's Status, or ok.
  static Status drain(BatchEngine& e) {
    while (auto b = e.next()) {
      if (!b->status.is_ok()) return b->status;
    }
    return Status::ok();
  }

  testing::TempDir dir_;
  std::shared_ptr<const Dataset> dataset_;
  BatchLayout layout_;
  std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<PipelineStats> stats_;
};

TEST_F(BatchEngineTest, VerifyOnceTrustsRecordsAfterTheirFirstCheck) {
  for (int workers : {0, 2}) {
    const std::string dir = dir_ / ("once" + std::to_string(workers));
    testing::write_labelled_dataset(dir, kRecords);
    dataset_ = Dataset::open(dir).value_or_throw();
    auto verified = std::make_shared<VerifiedSet>(kRecords);
    auto run = [&](VerifyPolicy policy, int64_t epoch) {
      EngineOptions options;
      options.verify = policy;
      auto e = engine(workers, options, 50, verified);
      e->start(epoch, 0);
      return drain(*e);
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

TEST_F(BatchEngineTest, BuffersStayBoundedByPrefetchAcrossEpochs) {
  for (int workers : {0, 4}) {
    EngineOptions options;
    options.prefetch = 3;
    auto e = engine(workers, options, 8);  // 125 batches an epoch
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      e->start(epoch, 0);
      int64_t n = 0;
      while (auto b = e->next()) ++n;
      EXPECT_EQ(n, 125);
    }
    // In flight: prefetch being built or waiting, plus the one the consumer holds.
    EXPECT_LE(pool_->allocations(), static_cast<size_t>(options.prefetch + 1));
  }
}

TEST_F(BatchEngineTest, DestroyingMidEpochCancelsAndJoinsPromptly) {
  for (int workers : {1, 4, 8}) {
    EngineOptions options;
    options.prefetch = 2;
    auto e = engine(workers, options, 4);
    e->start(0, 0);
    ASSERT_NE(e->next(), nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // workers wait on a full window
    auto start = std::chrono::steady_clock::now();
    e.reset();
    auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(ms, 100.0) << workers;
  }
}

TEST_F(BatchEngineTest, DestroyingCancelsAWorkerInTheMiddleOfHeavySamples) {
  // One worker, one piece of 32 samples of 50 ms each: 1.6 s unless cancelled mid-piece.
  layout_ = BatchLayout::create(dataset_->schema(),
                                {{"cost", busy_wait_transform(std::chrono::milliseconds(50))}})
                .value_or_throw();
  auto e = engine(1);
  e->start(0, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the worker is mid-piece
  const auto start = std::chrono::steady_clock::now();
  e.reset();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 500.0);
}

TEST_F(BatchEngineTest, AnEngineNeverStartedStopsCleanly) {
  for (int workers : {0, 3}) engine(workers).reset();
}

TEST_F(BatchEngineTest, BatchesOutliveTheirEngineAndPool) {
  std::shared_ptr<BatchBuffer> kept;
  {
    auto e = engine(2);
    e->start(0, 0);
    kept = e->next();
    pool_.reset();
  }
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->size, 32);
}

TEST_F(BatchEngineTest, RejectsBadOptions) {
  for (int workers : {-1, kMaxWorkers + 1}) EXPECT_THROW(engine(workers), Error);
  EngineOptions options;
  options.prefetch = 0;
  EXPECT_THROW(engine(1, options), Error);
  options.prefetch = 2;
  options.verify = VerifyPolicy::kOnce;  // without a VerifiedSet
  EXPECT_THROW(engine(1, options), Error);
}

}  // namespace
}  // namespace stoker
