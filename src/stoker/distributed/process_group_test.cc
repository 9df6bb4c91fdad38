#include "stoker/distributed/process_group.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/dist_ranks.h"
#include "stoker/testing/dist_scenarios.h"

namespace stoker {
namespace {

using std::chrono::milliseconds;
using testing::RanksRun;
using testing::RanksSpec;
using testing::TempDir;

std::vector<double> values_of(const at::Tensor& t) {
  const at::Tensor flat = t.to(at::kDouble).contiguous().view({-1});
  return std::vector<double>(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
}

// A timeout no test should meet: a failure before it came from the failure's own cause.
constexpr int kLongTimeoutMs = 300000;

RanksSpec worker(const std::vector<std::string>& args, int timeout_ms = 30000) {
  RanksSpec spec;
  spec.argv = {testing::kDistWorkerPath};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {"STOKER_TEST_DIST_TIMEOUT_MS=" + std::to_string(timeout_ms)};
  return spec;
}

void expect_collectives(const TempDir& dir, int world_size) {
  // The single-process reference: the same inputs combined here.
  at::Tensor sum = testing::rank_input(0);
  for (int r = 1; r < world_size; ++r) sum = sum + testing::rank_input(r);
  double sum64 = 0;
  for (int r = 0; r < world_size; ++r) sum64 += 0.25 * (r + 1);
  for (int r = 0; r < world_size; ++r) {
    auto got = testing::read_values(dir / ("out-" + std::to_string(r)));
    const std::vector<double> expected_sum = values_of(sum);
    ASSERT_EQ(got["sum"].size(), expected_sum.size());
    for (size_t i = 0; i < expected_sum.size(); ++i)
      EXPECT_NEAR(got["sum"][i], expected_sum[i], 1e-5) << "rank " << r << " element " << i;
    EXPECT_EQ(got["sum64"], std::vector<double>(6, sum64));
    EXPECT_EQ(got["max"], (std::vector<double>{0, 1, 2, 3}));  // rank 0's are the largest
    EXPECT_EQ(got["broadcast"], values_of(at::arange(6, at::kFloat) + 10));  // rank 1's
    EXPECT_EQ(got["async"], std::vector<double>(5, world_size * (world_size + 1) / 2.0));
  }
}

// Issue 13, test 1: all-reduce (and the other collectives) of two real processes over loopback,
// rank 0 serving the store, against the single-process reference.
TEST(ProcessGroupTest, CollectivesOfTwoProcessesMatchTheReference) {
  TempDir dir;
  const RanksRun run = testing::run_ranks(worker({"collectives", dir / "out"}), dir);
  ASSERT_EQ(run.outcome.exit_codes, (std::vector<int>{0, 0})) << run.outputs[0] << run.outputs[1];
  expect_collectives(dir, 2);
}

// The same with three ranks connecting to a store this process hosts, as torchrun's agent does
// (TORCHELASTIC_USE_AGENT_STORE=True: every rank is a client).
TEST(ProcessGroupTest, RanksConnectToAnAgentsStore) {
  TempDir dir;
  c10d::TCPStoreOptions options;
  options.port = 0;
  options.isServer = true;
  options.waitWorkers = false;
  c10d::TCPStore agent("127.0.0.1", options);
  RanksSpec spec = worker({"collectives", dir / "out"});
  spec.world_size = 3;
  spec.port = agent.getPort();
  spec.env.push_back("TORCHELASTIC_USE_AGENT_STORE=True");
  spec.env.push_back("TORCHELASTIC_RESTART_COUNT=1");
  const RanksRun run = testing::run_ranks(spec, dir);
  ASSERT_EQ(run.outcome.exit_codes, (std::vector<int>{0, 0, 0}))
      << run.outputs[0] << run.outputs[1] << run.outputs[2];
  expect_collectives(dir, 3);
  // The ranks' keys are under the restart's prefix.
  for (int r = 0; r < 3; ++r)
    EXPECT_TRUE(agent.check({"stoker/attempt_1/joined/" + std::to_string(r)})) << r;
}

// What the surviving rank said: one line, naming the failed operation and the cause.
void expect_peer_error(const RanksRun& run, const std::string& cause) {
  ASSERT_EQ(run.outcome.exit_codes[0], 1) << run.outputs[0];
  EXPECT_NE(run.outputs[0].find("rank 0 of 2: all-reduce failed"), std::string::npos)
      << run.outputs[0];
  EXPECT_NE(run.outputs[0].find(cause), std::string::npos) << run.outputs[0];
  EXPECT_EQ(std::count(run.outputs[0].begin(), run.outputs[0].end(), '\n'), 1) << run.outputs[0];
}

// Issue 13, test 4: a peer that dies makes the other rank fail with a clear error at once.
// "At once": the closed connection, not the timeout, ends the collective (the message says which
// it was); the bound is the timeout's half, wide enough for a loaded machine's process starts.
TEST(ProcessGroupTest, APeerThatExitsFailsTheCollective) {
  TempDir dir;
  const RanksRun run = testing::run_ranks(worker({"exit-early"}, kLongTimeoutMs), dir);
  EXPECT_EQ(run.outcome.exit_codes[1], 3);
  expect_peer_error(run, "a peer rank exited");
  EXPECT_LT(run.seconds, kLongTimeoutMs / 2000.0);
}

TEST(ProcessGroupTest, APeerKilledMidRunFailsTheCollective) {
  TempDir dir;
  const RanksRun run = testing::run_ranks(worker({"killed"}, kLongTimeoutMs), dir);
  EXPECT_EQ(run.outcome.exit_codes[1], 128 + SIGKILL);
  expect_peer_error(run, "a peer rank exited");
  EXPECT_LT(run.seconds, kLongTimeoutMs / 2000.0);
}

// A peer that hangs: the collective fails after the timeout, not later, and says so.
TEST(ProcessGroupTest, APeerThatHangsFailsTheCollectiveAtTheTimeout) {
  TempDir dir;
  RanksSpec spec = worker({"hang"}, 2000);
  spec.grace = milliseconds(100);  // then the hanging rank is killed
  const RanksRun run = testing::run_ranks(spec, dir);
  expect_peer_error(run, "did not answer within the 2 s timeout");
  EXPECT_GE(run.seconds, 1.9);
  EXPECT_LT(run.seconds, 120);  // ended, not hung (process starts take long on a loaded machine)
}

// A rank whose peers never come fails after the timeout, naming the store's address.
TEST(ProcessGroupTest, AMissingPeerFailsTheConnectionAtTheTimeout) {
  TempDir dir;
  for (int rank : {0, 1}) {  // the server waits for the client; the client for the server
    RanksSpec spec = worker({"connect"}, 2000);
    spec.ranks = {rank};
    const RanksRun run = testing::run_ranks(spec, dir);
    ASSERT_EQ(run.outcome.exit_codes, (std::vector<int>{1})) << run.outputs[0];
    EXPECT_NE(run.outputs[0].find(fmt::format("rank {} of 2: ", rank)), std::string::npos)
        << run.outputs[0];
    EXPECT_NE(run.outputs[0].find("127.0.0.1:"), std::string::npos) << run.outputs[0];
    EXPECT_LT(run.seconds, 120);  // ended, not hung
  }
}

TEST(ProcessGroupTest, RefusesWhatCannotBeAGroup) {
  EXPECT_EQ(ProcessGroup::connect(LaunchEnv(), milliseconds(1000)).status().code(),
            StatusCode::kInvalidArgument);
  LaunchEnv two;
  two.world_size = 2;
  two.master_addr = "127.0.0.1";
  two.master_port = 1;
  EXPECT_EQ(ProcessGroup::connect(two, milliseconds(0)).status().code(),
            StatusCode::kInvalidArgument);
}

// Without NCCL in the build (a CPU-only LibTorch) or without a GPU, asking for it is refused
// before any connection, naming what is missing; with both, it is accepted.
TEST(ProcessGroupTest, TheNcclBackendIsRefusedWhereTheBuildOrTheMachineLacksIt) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  const Result<std::unique_ptr<ProcessGroup>> group =
      ProcessGroup::over_store(store, 0, 1, milliseconds(1000), DistBackend::kNccl);
  if (nccl_available() && torch::cuda::device_count() > 0) {
    ASSERT_TRUE(group.is_ok()) << group.status().message();
    EXPECT_EQ(group.value()->backend(), DistBackend::kNccl);
    return;
  }
  ASSERT_EQ(group.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(group.status().message(),
            nccl_available()
                ? "the nccl backend needs a CUDA GPU, and none is visible here; use gloo"
                : "the nccl backend needs a stoker built against a LibTorch with CUDA and NCCL "
                  "(this one has neither); use gloo");
  const Result<std::unique_ptr<ProcessGroup>> gloo =
      ProcessGroup::over_store(store, 0, 1, milliseconds(1000));
  ASSERT_TRUE(gloo.is_ok()) << gloo.status().message();
  EXPECT_EQ(gloo.value()->backend(), DistBackend::kGloo);
  EXPECT_STREQ(kDistBackendNames.name(gloo.value()->backend()), "gloo");
}

}  // namespace
}  // namespace stoker
