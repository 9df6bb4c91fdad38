#include "stoker/doctor/step_split.h"

#include <gtest/gtest.h>

#include <thread>

namespace stoker {
namespace {

constexpr int64_t kMs = 1'000'000;  // nanoseconds

// Records one training batch at `t` (ns): data, h2d, forward, backward, optimizer (with an
// all-reduce wait inside), each `ms` long in that order; returns the batch's end.
int64_t record_batch(Tracer& tracer, int64_t t, int64_t ms, bool allreduce) {
  for (const char* name : {"data", "h2d", "forward", "backward"}) {
    tracer.complete("train", name, t, t + ms * kMs);
    t += ms * kMs;
  }
  tracer.complete("train", "optimizer", t, t + 2 * ms * kMs);
  if (allreduce) tracer.complete("train", "allreduce_wait", t, t + ms * kMs);
  return t + 2 * ms * kMs;
}

TEST(StepSplitTest, SumsEachPartOverTheWindow) {
  Tracer tracer;
  int64_t t = 0;
  for (int b = 0; b < 10; ++b) t = record_batch(tracer, t, 1, /*allreduce=*/false);
  const StepSplit split = split_steps(tracer.snapshot(), 0, t);
  EXPECT_EQ(split.batches, 10);
  EXPECT_NEAR(split.wall, 60e-3, 1e-12);
  EXPECT_NEAR(split.data, 10e-3, 1e-12);
  EXPECT_NEAR(split.h2d, 10e-3, 1e-12);
  EXPECT_NEAR(split.forward, 10e-3, 1e-12);
  EXPECT_NEAR(split.backward, 10e-3, 1e-12);
  EXPECT_NEAR(split.optimizer, 20e-3, 1e-12);
  EXPECT_NEAR(split.other(), 0, 1e-12);
  EXPECT_NEAR(split.per_batch(split.optimizer), 2e-3, 1e-12);
  EXPECT_NEAR(split.per_second(split.wall), 10 / 60e-3, 1e-9);
  EXPECT_NEAR(split.per_second(split.wall - split.data), 10 / 50e-3, 1e-9);
  EXPECT_NEAR(split.compute(), 40e-3, 1e-12);
}

TEST(StepSplitTest, TheAllReduceWaitComesOutOfTheOptimizer) {
  Tracer tracer;
  int64_t t = 0;
  for (int b = 0; b < 4; ++b) t = record_batch(tracer, t, 1, /*allreduce=*/true);
  const StepSplit split = split_steps(tracer.snapshot(), 0, t);
  EXPECT_NEAR(split.allreduce_wait, 4e-3, 1e-12);
  EXPECT_NEAR(split.optimizer, 4e-3, 1e-12);
  EXPECT_NEAR(split.compute(), 4 * 4e-3, 1e-12);  // forward, backward, optimizer, wait
}

TEST(StepSplitTest, OnlyWholeTrainSpansInsideTheWindowCount) {
  Tracer tracer;
  int64_t t = 0;
  for (int b = 0; b < 5; ++b) t = record_batch(tracer, t, 1, false);  // warm-up
  const int64_t from = t;
  for (int b = 0; b < 5; ++b) t = record_batch(tracer, t, 2, false);
  const int64_t to = t;
  tracer.complete("train", "h2d", to - kMs, to + kMs);  // straddles the end
  tracer.complete("pipeline", "wait", from, to);        // another category
  tracer.complete("train", "eval", from, to);           // not a part of a training batch
  const StepSplit split = split_steps(tracer.snapshot(), from, to);
  EXPECT_EQ(split.batches, 5);
  EXPECT_NEAR(split.data, 10e-3, 1e-12);
  EXPECT_NEAR(split.wall, 60e-3, 1e-12);
}

TEST(StepSplitTest, TimeInNoPartIsOther) {
  Tracer tracer;
  tracer.complete("train", "h2d", 0, kMs);
  tracer.complete("train", "forward", 3 * kMs, 4 * kMs);
  const StepSplit split = split_steps(tracer.snapshot(), 0, 10 * kMs);
  EXPECT_NEAR(split.other(), 8e-3, 1e-12);
  ASSERT_EQ(split.parts().size(), 7u);
  EXPECT_EQ(split.parts().back().first, "other");
}

TEST(StepSplitTest, TheWorkersShardFetchesAreSummedBesideTheParts) {
  Tracer tracer;
  int64_t t = 0;
  for (int b = 0; b < 4; ++b) t = record_batch(tracer, t, 1, false);
  std::thread worker([&] {
    tracer.complete("pipeline", "fetch", 0, 3 * kMs);
    tracer.complete("pipeline", "read", 3 * kMs, 4 * kMs);
  });
  worker.join();
  tracer.complete("pipeline", "fetch", kMs, 2 * kMs);
  const StepSplit split = split_steps(tracer.snapshot(), 0, t);
  EXPECT_NEAR(split.fetch, 4e-3, 1e-12);
  EXPECT_NEAR(split.data, 4e-3, 1e-12);  // worker time, not the training thread's
  EXPECT_NEAR(split.other(), 0, 1e-12);
  EXPECT_EQ(split_steps(tracer.snapshot(), t, 2 * t).fetch, 0);
}

TEST(StepSplitTest, SpansOfEveryThreadCount) {
  Tracer tracer;
  std::thread other([&] { tracer.complete("train", "h2d", 0, kMs); });
  other.join();
  tracer.complete("train", "h2d", kMs, 2 * kMs);
  EXPECT_EQ(split_steps(tracer.snapshot(), 0, 2 * kMs).batches, 2);
}

TEST(StepSplitTest, AnEmptyWindowIsZero) {
  Tracer tracer;
  const StepSplit split = split_steps(tracer.snapshot(), 5, 5);
  EXPECT_EQ(split.batches, 0);
  EXPECT_EQ(split.wall, 0);
  EXPECT_EQ(split.per_batch(1.0), 0);
  EXPECT_EQ(split.per_second(0), 0);
  EXPECT_EQ(split.per_second(-1), 0);
  EXPECT_EQ(split.other(), 0);
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

TEST(SumSpansTest, SumsOneNameOfOneCategoryInsideTheWindowOverThreads) {
  Tracer tracer;
  std::thread worker([&] {
    tracer.complete("pipeline", "piece", 0, 3 * kMs);
    tracer.complete("pipeline", "piece", 3 * kMs, 4 * kMs);
    tracer.complete("pipeline", "read", 0, 1 * kMs);
    tracer.complete("pipeline", "piece", 9 * kMs, 11 * kMs);  // ends past the window
  });
  worker.join();
  tracer.complete("pipeline", "piece", 5 * kMs, 6 * kMs);
  tracer.complete("train", "piece", 5 * kMs, 6 * kMs);
  EXPECT_NEAR(sum_spans(tracer.snapshot(), "pipeline", "piece", 0, 10 * kMs), 5e-3, 1e-12);
  EXPECT_EQ(sum_spans(tracer.snapshot(), "pipeline", "finalize", 0, 10 * kMs), 0);
}

}  // namespace
}  // namespace stoker
