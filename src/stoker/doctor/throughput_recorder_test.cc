#include "stoker/doctor/throughput_recorder.h"

#include <gtest/gtest.h>

namespace stoker::test {
namespace {

// A clock the test moves.
struct FakeClock {
  double now = 100;
  ThroughputRecorder::Clock clock() {
    return [this] { return now; };
  }
};

TEST(ThroughputRecorderTest, PointsAreRatesOverEachInterval) {
  FakeClock t;
  ThroughputRecorder recorder(t.clock(), 0.5);
  recorder.record(0);  // time zero
  t.now += 0.2;
  recorder.record(100);  // too soon: no point
  EXPECT_TRUE(recorder.points().empty());
  t.now += 0.3;
  recorder.record(250);
  ASSERT_EQ(recorder.points().size(), 1u);
  EXPECT_DOUBLE_EQ(recorder.points()[0].x, 0.5);
  EXPECT_DOUBLE_EQ(recorder.points()[0].y, 500);  // 250 samples in 0.5 s
  t.now += 1.0;
  recorder.record(350);
  ASSERT_EQ(recorder.points().size(), 2u);
  EXPECT_DOUBLE_EQ(recorder.points()[1].x, 1.5);
  EXPECT_DOUBLE_EQ(recorder.points()[1].y, 100);
}

TEST(ThroughputRecorderTest, RestartLeavesAPauseOut) {
  FakeClock t;
  ThroughputRecorder recorder(t.clock(), 0.1);
  recorder.restart(0);
  t.now += 1;
  recorder.record(1000);
  t.now += 5;  // evaluation: nothing trained
  recorder.restart(1000);
  t.now += 1;
  recorder.record(3000);
  ASSERT_EQ(recorder.points().size(), 2u);
  EXPECT_DOUBLE_EQ(recorder.points()[1].x, 7);  // time still counts from the start
  EXPECT_DOUBLE_EQ(recorder.points()[1].y, 2000);
}

TEST(ThroughputRecorderTest, LongRunsKeepAFewHundredPoints) {
  FakeClock t;
  ThroughputRecorder recorder(t.clock(), 0.05);
  int64_t samples = 0;
  recorder.record(samples);
  for (int batch = 0; batch < 1000000; ++batch) {  // 10,000 s at 100 batches/s
    t.now += 0.01;
    recorder.record(samples += 64);
  }
  EXPECT_GT(recorder.points().size(), 300u);
  EXPECT_LT(recorder.points().size(), 1500u);
  for (const ReportPoint& p : recorder.points()) EXPECT_NEAR(p.y, 6400, 1e-3);
}

}  // namespace
}  // namespace stoker::test
