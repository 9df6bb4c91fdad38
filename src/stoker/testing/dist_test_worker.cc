// One rank of distributed_test's multi-process scenarios. Reads the launch environment (the test
// sets torchrun's variables), connects with the timeout in STOKER_TEST_DIST_TIMEOUT_MS and runs
//   dist_test_worker SCENARIO [OUT]
// collectives OUT: sums, maxima, a broadcast, an async sum and a barrier; results into OUT-RANK.
// exit-early:      rank 1 exits right after connecting; rank 0 then all-reduces.
// hang:            rank 1 sleeps after connecting; rank 0 all-reduces.
// killed:          both all-reduce in a loop; rank 1 is SIGKILLed after 20 rounds.
// reducer OUT STEPS ACCUM OVERLAP: train_tiny (test_scenarios.h) with a GradientReducer of small
//                  buckets, from parameters that differ per rank until rank 0's are broadcast;
//                  the parameters, votes, finite flags and stats into OUT-RANK.
// connect:         connects and exits.
// A failure prints "dist_test_worker: MESSAGE" on stderr and exits 1.
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "stoker/distributed/process_group.h"
#include "stoker/testing/dist_scenarios.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

// "NAME v v v\n" for the tensor's values in row-major order.
std::string line(const std::string& name, const at::Tensor& t) {
  std::string s = name;
  const at::Tensor flat = t.to(at::kDouble).contiguous().view({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) s += fmt::format(" {:.17g}", flat[i].item<double>());
  return s + "\n";
}

void collectives(ProcessGroup& group, const std::string& out) {
  const int r = group.rank();
  at::Tensor sum = testing::rank_input(r);
  at::Tensor sum64 = at::full({2, 3}, 0.25 * (r + 1), at::kDouble);
  at::Tensor max = at::arange(4, at::kFloat) * (r == 0 ? 1 : -1);
  throw_if_error(group.all_reduce({sum, sum64}));
  throw_if_error(group.all_reduce({max}, ReduceOp::kMax));
  // A non-contiguous view: every rank ends with rank 1's values.
  at::Tensor base = at::arange(6, at::kFloat).view({2, 3}) + 10 * r;
  at::Tensor view = base.t();
  throw_if_error(group.broadcast({view}, 1));
  at::Tensor async = at::full({5}, static_cast<float>(r + 1));
  PendingReduce pending = group.all_reduce_async(async);
  throw_if_error(pending.wait());
  throw_if_error(group.barrier());
  throw_if_error(write_file_atomically(out, line("sum", sum) + line("sum64", sum64) +
                                                line("max", max) + line("broadcast", base) +
                                                line("async", async)));
}

void reducer(ProcessGroup& group, const std::string& out, int steps, int accum, bool overlap) {
  testing::TinyNet net(7 + group.rank());
  {
    at::NoGradGuard no_grad;
    throw_if_error(group.broadcast(net.params, 0));
  }
  GradientReducerOptions options;
  options.first_bucket_bytes = 64;
  options.bucket_bytes = 256;
  GradientReducer reducer(group, net.params, options);
  const testing::TinyRun run =
      testing::train_tiny(net, steps, accum, group.rank(), group.world_size(), &reducer, overlap);
  std::string text;
  for (size_t i = 0; i < net.params.size(); ++i)
    text += line(fmt::format("param{}", i), net.params[i].detach());
  text += line("votes", at::tensor(run.votes));
  text += line("finite", at::tensor(run.finite));
  const AllReduceStats& stats = reducer.stats();
  text += fmt::format("stats {} {} {} {}\n", reducer.bucket_count(), stats.reductions,
                      stats.buckets, stats.buckets_in_backward);
  throw_if_error(write_file_atomically(out, text));
}

int run(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  const LaunchEnv env = read_launch_env().value_or_throw();
  const char* ms = std::getenv("STOKER_TEST_DIST_TIMEOUT_MS");
  const std::chrono::milliseconds timeout(ms ? std::atoll(ms) : 30000);
  std::unique_ptr<ProcessGroup> group = ProcessGroup::connect(env, timeout).value_or_throw();
  at::Tensor one = at::ones({1000});
  if (scenario == "collectives") {
    collectives(*group, fmt::format("{}-{}", argv[2], group->rank()));
  } else if (scenario == "reducer" && argc == 6) {
    reducer(*group, fmt::format("{}-{}", argv[2], group->rank()), std::atoi(argv[3]),
            std::atoi(argv[4]), std::atoi(argv[5]) != 0);
  } else if (scenario == "exit-early") {
    if (group->rank() == 1) ::_exit(3);
    throw_if_error(group->all_reduce({one}));
  } else if (scenario == "hang") {
    if (group->rank() == 1) std::this_thread::sleep_for(std::chrono::minutes(2));
    throw_if_error(group->all_reduce({one}));
  } else if (scenario == "killed") {
    for (int round = 0;; ++round) {
      if (round == 20 && group->rank() == 1) ::raise(SIGKILL);
      throw_if_error(group->all_reduce({one}));
    }
  } else if (scenario != "connect") {
    std::fprintf(stderr, "dist_test_worker: unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }
  return 0;
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) {
  try {
    return stoker::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_test_worker: %s\n", e.what());
    return 1;
  }
}
