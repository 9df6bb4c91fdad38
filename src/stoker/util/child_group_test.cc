#include "stoker/util/child_group.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <thread>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kLong(60000);

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST(ChildGroupTest, CollectsExitCodesInOrderWithEnvironmentAndOutput) {
  testing::TempDir dir;
  ChildGroup group;
  ASSERT_TRUE(group
                  .start({{"/bin/sh", "-c", "echo \"$STOKER_X\"; echo err >&2; exit 3"},
                          {"STOKER_X=one two"},
                          dir / "a.txt"})
                  .is_ok());
  ASSERT_TRUE(group.start({{"sh", "-c", "exit 0"}, {}, ""}).is_ok());  // PATH lookup
  const ChildOutcome outcome = group.wait(kLong, kLong);
  EXPECT_EQ(outcome.exit_codes, (std::vector<int>{3, 0}));
  EXPECT_EQ(outcome.first_failure, 0);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_EQ(read_file(dir / "a.txt").value_or_throw(), "one two\nerr\n");
}

TEST(ChildGroupTest, KillsChildrenStillRunningAtTheTimeout) {
  ChildGroup group;
  ASSERT_TRUE(group.start({{"sleep", "60"}, {}, ""}).is_ok());
  ASSERT_TRUE(group.start({{"sh", "-c", "exit 0"}, {}, ""}).is_ok());
  const Clock::time_point start = Clock::now();
  const ChildOutcome outcome = group.wait(milliseconds(200), kLong);
  EXPECT_LT(seconds_since(start), 10);
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_EQ(outcome.exit_codes, (std::vector<int>{128 + SIGKILL, 0}));
  EXPECT_EQ(outcome.first_failure, -1);  // killed here, not failed by itself
}

// Once one child fails, the others get `grace` to end on their own, then are killed.
TEST(ChildGroupTest, PeersOfAFailedChildGetTheGraceThenAreKilled) {
  ChildGroup group;
  ASSERT_TRUE(group.start({{"sleep", "60"}, {}, ""}).is_ok());
  ASSERT_TRUE(group.start({{"sh", "-c", "exit 5"}, {}, ""}).is_ok());
  const Clock::time_point start = Clock::now();
  const ChildOutcome outcome = group.wait(kLong, milliseconds(100));
  EXPECT_LT(seconds_since(start), 10);
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_EQ(outcome.first_failure, 1);
  EXPECT_EQ(outcome.exit_codes, (std::vector<int>{128 + SIGKILL, 5}));
  EXPECT_LT(outcome.exit_seconds[1], outcome.exit_seconds[0]);  // the failure came first
  EXPECT_GE(outcome.exit_seconds[0], 0.09);                     // then the grace
}

TEST(ChildGroupTest, ForwardsASignal) {
  testing::TempDir dir;
  const std::string ready = dir / "ready";
  ChildGroup group;
  ASSERT_TRUE(group
                  .start({{"sh", "-c",
                           "trap 'exit 7' TERM; touch " + ready + "; while :; do sleep 0.01; done"},
                          {},
                          ""})
                  .is_ok());
  std::atomic<int> forward{0};
  std::thread signaller([&] {  // once the child's trap is set (or after 10 s)
    const Clock::time_point start = Clock::now();
    while (!std::filesystem::exists(ready) && seconds_since(start) < 10)
      std::this_thread::sleep_for(milliseconds(5));
    forward.store(SIGTERM);
  });
  const ChildOutcome outcome = group.wait(kLong, kLong, &forward);
  signaller.join();
  EXPECT_EQ(outcome.exit_codes, (std::vector<int>{7}));
}

TEST(ChildGroupTest, AProgramThatCannotRunIsNamed) {
  ChildGroup group;
  const Status s = group.start({{"/nonexistent/program"}, {}, ""});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("cannot run /nonexistent/program"), std::string::npos);
  EXPECT_EQ(group.start({{}, {}, ""}).code(), StatusCode::kInvalidArgument);
  testing::TempDir dir;
  EXPECT_EQ(group.start({{"true"}, {}, dir / "missing/out.txt"}).code(), StatusCode::kIoError);
}

// Destroying the group kills and reaps what still runs.
TEST(ChildGroupTest, DestructionKillsTheChildren) {
  pid_t pid;
  {
    ChildGroup group;
    ASSERT_TRUE(group.start({{"sleep", "60"}, {}, ""}).is_ok());
    pid = group.pid(0);
  }
  EXPECT_NE(::kill(pid, 0), 0);  // gone (reaped)
}

}  // namespace
}  // namespace stoker
