#include "stoker/distributed/gradient_reducer.h"

#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/dist_ranks.h"
#include "stoker/testing/dist_scenarios.h"

namespace stoker {
namespace {

using testing::RanksRun;
using testing::RanksSpec;
using testing::TempDir;

struct Case {
  int world_size;
  int steps;
  int accum;
  bool overlap;
};

// Runs the "reducer" scenario on `c.world_size` ranks and compares every rank's parameters,
// votes and skipped steps with one process training on the whole of each micro-batch.
void expect_matches_one_process(const Case& c) {
  TempDir dir;
  RanksSpec spec;
  spec.world_size = c.world_size;
  spec.argv = {testing::kDistWorkerPath,
               "reducer",
               dir / "out",
               std::to_string(c.steps),
               std::to_string(c.accum),
               std::to_string(c.overlap ? 1 : 0)};
  spec.env = {"STOKER_TEST_DIST_TIMEOUT_MS=30000"};
  const RanksRun run = testing::run_ranks(spec, dir);
  ASSERT_EQ(run.outcome.exit_codes, std::vector<int>(c.world_size, 0)) << run.outputs[0];

  testing::TinyNet reference(7);  // rank 0's initial parameters
  const testing::TinyRun expected = testing::train_tiny(reference, c.steps, c.accum, 0, 1, nullptr);
  std::vector<double> votes(expected.votes.begin(), expected.votes.end());
  std::vector<double> finite(expected.finite.begin(), expected.finite.end());
  EXPECT_EQ(finite[testing::kInfStep], 0);  // the step with an infinite loss is skipped

  for (int r = 0; r < c.world_size; ++r) {
    auto got = testing::read_values(dir / ("out-" + std::to_string(r)));
    for (size_t i = 0; i < reference.params.size(); ++i) {
      const at::Tensor p = reference.params[i].detach().contiguous().view({-1});
      const std::vector<double>& values = got["param" + std::to_string(i)];
      ASSERT_EQ(values.size(), static_cast<size_t>(p.numel()));
      for (int64_t j = 0; j < p.numel(); ++j)
        EXPECT_NEAR(values[j], p[j].item<double>(), 1e-5) << "rank " << r << " param " << i;
    }
    EXPECT_EQ(got["votes"], votes) << "rank " << r;
    EXPECT_EQ(got["finite"], finite) << "rank " << r;  // every rank skips the same step
    // stats: buckets, reductions, bucket all-reduces, of which started during backward.
    const std::vector<double> buckets = {2, double(c.steps), 2.0 * c.steps,
                                         c.overlap ? 2.0 * c.steps : 0};
    EXPECT_EQ(got["stats"], buckets) << "rank " << r;
  }
}

// Issue 13, test 2 at the reducer's level: two ranks' averaged gradients train the same
// parameters as one process on the whole batch; an infinite gradient on one rank makes every
// rank skip that step; a vote reaches every rank.
TEST(GradientReducerTest, TwoRanksTrainLikeOneProcess) {
  expect_matches_one_process({2, 5, 1, true});
}

// With gradient accumulation: one all-reduce per step, after the step's last backward.
TEST(GradientReducerTest, AccumulatedStepsReduceOncePerStep) {
  expect_matches_one_process({2, 4, 3, true});
}

// Three ranks, and steps reduced in synchronize() alone (no overlap).
TEST(GradientReducerTest, ThreeRanksWithoutOverlap) {
  expect_matches_one_process({3, 4, 2, false});
}

// A group of one process (over an in-memory store) for what needs no peer.
std::unique_ptr<ProcessGroup> group_of_one() {
  return ProcessGroup::over_store(c10::make_intrusive<c10d::HashStore>(), 0, 1,
                                  std::chrono::seconds(10))
      .value_or_throw();
}

TEST(GradientReducerTest, RefusesParametersItCannotReduce) {
  std::unique_ptr<ProcessGroup> group = group_of_one();
  testing::TinyNet net(1);
  auto code = [&group](const std::vector<at::Tensor>& params) {
    try {
      GradientReducer reducer(*group, params);
    } catch (const Error& e) {
      return e.status().code();
    }
    return StatusCode::kOk;
  };
  EXPECT_EQ(code({net.params[0].detach()}), StatusCode::kInvalidArgument);  // none trainable
  EXPECT_EQ(code({net.params[0] * 2}), StatusCode::kInvalidArgument);       // not a leaf
  EXPECT_EQ(code(net.params), StatusCode::kOk);
}

// In one process the reducer changes nothing: the same parameters as without it, exactly.
TEST(GradientReducerTest, OneRankLeavesGradientsAsTheyAre) {
  std::unique_ptr<ProcessGroup> group = group_of_one();
  testing::TinyNet with(3), without(3);
  GradientReducerOptions options;
  options.first_bucket_bytes = options.bucket_bytes = 1;  // one bucket per parameter
  GradientReducer reducer(*group, with.params, options);
  EXPECT_EQ(reducer.bucket_count(), 4u);
  testing::train_tiny(with, 4, 2, 0, 1, &reducer);
  testing::train_tiny(without, 4, 2, 0, 1, nullptr);
  for (size_t i = 0; i < with.params.size(); ++i)
    EXPECT_TRUE(with.params[i].equal(without.params[i])) << i;
  EXPECT_EQ(reducer.stats().reductions, 4);
  EXPECT_EQ(reducer.stats().buckets, 16);
  EXPECT_EQ(reducer.stats().buckets_in_backward, 16);
  EXPECT_GE(reducer.stats().reduce_seconds, reducer.stats().exposed_seconds);
}

// The hooks go with the reducer: the parameters train on without it.
TEST(GradientReducerTest, DestructionRemovesTheHooks) {
  std::unique_ptr<ProcessGroup> group = group_of_one();
  testing::TinyNet net(3);
  { GradientReducer reducer(*group, net.params); }
  testing::TinyNet reference(3);
  testing::train_tiny(net, 2, 1, 0, 1, nullptr);
  testing::train_tiny(reference, 2, 1, 0, 1, nullptr);
  for (size_t i = 0; i < net.params.size(); ++i)
    EXPECT_TRUE(net.params[i].equal(reference.params[i])) << i;
}

}  // namespace
}  // namespace stoker
