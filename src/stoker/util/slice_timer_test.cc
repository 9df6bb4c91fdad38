#include "stoker/util/slice_timer.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace stoker {
namespace {

TEST(SliceTimerTest, EndsOneSliceAtEachBoundary) {
  SliceTimer timer(10, 4);  // boundaries after steps 2, 5, 7 and 10
  for (int64_t step = 1; step <= 10; ++step) {
    timer.step_done(step);
    const size_t expected = step >= 10 ? 4 : step >= 7 ? 3 : step >= 5 ? 2 : step >= 2 ? 1 : 0;
    EXPECT_EQ(timer.seconds().size(), expected) << "after step " << step;
  }
}

TEST(SliceTimerTest, SlicesAddUpToTheRunAndSeeWhereTimeWent) {
  SliceTimer timer(4, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // before the run: not timed
  const auto start = std::chrono::steady_clock::now();
  timer.restart();
  timer.step_done(1);
  timer.step_done(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  timer.step_done(3);
  timer.step_done(4);
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(timer.seconds().size(), 2u);
  EXPECT_LT(timer.seconds()[0], timer.seconds()[1]);
  EXPECT_GE(timer.seconds()[1], 0.2);
  EXPECT_LE(timer.seconds()[0] + timer.seconds()[1], total);
}

TEST(SliceTimerTest, AJumpPastSeveralBoundariesEndsEachOfThem) {
  SliceTimer timer(10, 5);
  timer.step_done(7);  // boundaries 2, 4 and 6
  EXPECT_EQ(timer.seconds().size(), 3u);
  timer.step_done(10);
  EXPECT_EQ(timer.seconds().size(), 5u);
  timer.restart();
  EXPECT_TRUE(timer.seconds().empty());
}

TEST(SliceTimerTest, MoreSlicesThanStepsGivesOneSlicePerStep) {
  SliceTimer timer(3, 10);
  for (int64_t step = 1; step <= 3; ++step) timer.step_done(step);
  EXPECT_EQ(timer.seconds().size(), 3u);
}

TEST(QuietFloorTest, SumsTheFastestTimeOfEachSlice) {
  EXPECT_DOUBLE_EQ(quiet_floor({{1.0, 5.0, 3.0}, {2.0, 4.0, 6.0}}), 1.0 + 4.0 + 3.0);
  EXPECT_DOUBLE_EQ(quiet_floor({{1.5, 2.5}}), 4.0);
}

TEST(QuietFloorTest, RejectsNoRunsAndMismatchedSlicing) {
  EXPECT_THROW(quiet_floor({}), std::invalid_argument);
  EXPECT_THROW(quiet_floor({{1.0, 2.0}, {1.0}}), std::invalid_argument);
  EXPECT_THROW(quiet_floor({{}, {1.0}}), std::invalid_argument);
  EXPECT_THROW(quiet_floor({{}}), std::invalid_argument);
}

}  // namespace
}  // namespace stoker
