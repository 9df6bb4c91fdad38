// `stoker train` as the ranks of a distributed run over loopback (issue 13's tests): ranks
// started with torchrun's variables, by `--nproc`, and by two real torchrun agents. Every run
// has a deadline after which its processes are killed: a test fails, it never hangs.
#include <ATen/TensorOperators.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/classification.h"
#include "stoker/testing/dist_ranks.h"
#include "stoker/testing/report_json.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/train_outputs.h"
#include "stoker/train/checkpoint.h"
#include "stoker/util/child_group.h"
#include "stoker/util/subprocess.h"

namespace stoker {
namespace {

using std::chrono::milliseconds;
using testing::log_records;
using testing::RanksRun;
using testing::RanksSpec;
using testing::saved_parameters;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class DistTrainCliTest : public ::testing::Test {
 protected:
  // A folder with train/ (`train` records) and test/ (`test` records).
  std::string write_data(int64_t train, int64_t test) {
    const std::string data = dir_ / fmt::format("data-{}-{}", train, test);
    testing::write_rows_dataset(data + "/train", train, 1);
    testing::write_rows_dataset(data + "/test", test, 2);
    return data;
  }
  // `stoker train` on `data` with batch `batch` per rank: deterministic (no workers, one
  // thread, a seed), logged to `name`.jsonl.
  std::vector<std::string> train(const std::string& data, int batch, const std::string& name,
                                 const std::vector<std::string>& more = {}) const {
    // --log, as users write it: under torchrun after a `--` (TwoTorchrunAgentsAsTwoNodes).
    std::vector<std::string> args = {testing::kStokerCliPath,
                                     "train",
                                     "--data",
                                     data,
                                     "--batch",
                                     std::to_string(batch),
                                     "--epochs",
                                     "2",
                                     "--workers",
                                     "0",
                                     "--threads",
                                     "1",
                                     "--seed",
                                     "3",
                                     "--log",
                                     dir_ / (name + ".jsonl")};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  // Runs `args` as `world_size` ranks (torchrun's variables, rank 0 serving the store); expects
  // every rank to succeed.
  RanksRun run_ranks(const std::vector<std::string>& args, int world_size) const {
    RanksSpec spec;
    spec.argv = args;
    spec.world_size = world_size;
    spec.timeout = std::chrono::minutes(2);
    const RanksRun run = testing::run_ranks(spec, dir_);
    for (int r = 0; r < world_size; ++r)
      EXPECT_EQ(run.outcome.exit_codes[r], 0) << "rank " << r << ": " << run.outputs[r];
    return run;
  }
  std::vector<nlohmann::json> epochs(const std::string& name) const {
    return log_records(dir_ / (name + ".jsonl"), "epoch");
  }

  testing::TempDir dir_;
};

void expect_same_parameters(const std::string& a, const std::string& b) {
  const std::vector<at::Tensor> x = saved_parameters(a);
  const std::vector<at::Tensor> y = saved_parameters(b);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LT((x[i] - y[i]).abs().max().item<double>(), 1e-5) << a << " tensor " << i;
    EXPECT_GT(x[i].abs().max().item<double>(), 0) << "tensor " << i;
  }
}

// The epoch records of two runs describe the same training: steps, samples, losses, accuracy.
void expect_same_epochs(const std::vector<nlohmann::json>& a,
                        const std::vector<nlohmann::json>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t e = 0; e < a.size(); ++e) {
    EXPECT_EQ(a[e]["steps"], b[e]["steps"]) << e;
    EXPECT_EQ(a[e]["samples"], b[e]["samples"]) << e;
    for (const char* key : {"train_loss", "test_loss", "test_accuracy"})
      EXPECT_NEAR(a[e][key].get<double>(), b[e][key].get<double>(), 1e-5) << key << " " << e;
  }
}

// Issue 13, test 2: two ranks of batch 8 train the same model as one process of batch 16 on
// the same global order (docs/DESIGN.md contract 1), to 1e-5; with accumulation too (two ranks of
// batch 4, two batches per step). The test set (57 samples, not even over 2 ranks) is evaluated
// sharded, each sample once: the same test loss and accuracy.
TEST_F(DistTrainCliTest, TwoRanksTrainLikeOneProcessWithTwiceTheBatch) {
  const std::string data = write_data(160, 57);
  run_ranks(train(data, 16, "one", {"--save-model", dir_ / "one.pt"}), 1);
  run_ranks(train(data, 8, "two", {"--save-model", dir_ / "two.pt"}), 2);
  run_ranks(train(data, 4, "accum", {"--accum", "2", "--save-model", dir_ / "accum.pt"}), 2);
  expect_same_parameters(dir_ / "two.pt", dir_ / "one.pt");
  expect_same_parameters(dir_ / "accum.pt", dir_ / "one.pt");
  expect_same_epochs(epochs("two"), epochs("one"));
  expect_same_epochs(epochs("accum"), epochs("one"));
  EXPECT_EQ(epochs("two").back()["steps"], 20);
  EXPECT_EQ(epochs("two").back()["allreduces"], 10);  // per epoch: one per step
  EXPECT_FALSE(epochs("one").back().contains("allreduces"));
  const nlohmann::json run = log_records(dir_ / "two.jsonl", "run").at(0);
  EXPECT_EQ(run["config"]["world_size"], 2);
  EXPECT_EQ(run["config"]["dist_backend"], "gloo");
}

// Issue 13, test 3: data that does not divide by world size x batch (203 samples, 3 ranks of
// batch 8): every rank takes the same number of steps and none hangs; each epoch delivers every
// sample once plus the padding that evens the ranks out (204 samples). The test set's 58
// samples, dealt 20/19/19 with padding, are each counted once: a run that does not change the
// model (lr 1e-30) measures the same test loss as one process.
TEST_F(DistTrainCliTest, UnevenDataEndsEveryRankAfterTheSameSteps) {
  const std::string data = write_data(203, 58);
  const std::vector<std::string> frozen = {"--lr", "1e-30"};
  run_ranks(train(data, 8, "three", frozen), 3);
  run_ranks(train(data, 24, "one", frozen), 1);
  const std::vector<nlohmann::json> three = epochs("three");
  ASSERT_EQ(three.size(), 2u);
  EXPECT_EQ(three[0]["steps"], 9);  // ceil(ceil(203 / 3) / 8)
  EXPECT_EQ(three[1]["steps"], 18);
  EXPECT_EQ(three[0]["samples"], 204);
  const std::vector<nlohmann::json> one = epochs("one");
  EXPECT_EQ(one[0]["samples"], 203);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(three[e]["test_loss"].get<double>(), one[e]["test_loss"].get<double>(), 1e-6);
    EXPECT_NEAR(three[e]["test_accuracy"].get<double>(), one[e]["test_accuracy"].get<double>(),
                1e-9);
  }
}

// Issue 13, test 5: a checkpoint written by two ranks resumes in one process of the same
// global batch, and one written by one process resumes on two ranks; both continue the global
// order exactly: the models equal an uninterrupted run's.
TEST_F(DistTrainCliTest, ResumesWithAnotherWorldSize) {
  const std::string data = write_data(160, 57);
  run_ranks(train(data, 16, "straight", {"--save-model", dir_ / "straight.pt"}), 1);

  const std::vector<std::string> two_to_one = {"--checkpoint-dir", dir_ / "ckpt-a"};
  std::vector<std::string> first = two_to_one;
  first.insert(first.end(), {"--max-steps", "13"});  // inside the second epoch
  run_ranks(train(data, 8, "a1", first), 2);
  EXPECT_EQ(find_checkpoint(dir_ / "ckpt-a").value_or_throw().state.step, 13);
  std::vector<std::string> second = two_to_one;
  second.insert(second.end(), {"--resume", "--save-model", dir_ / "a.pt"});
  run_ranks(train(data, 16, "a2", second), 1);
  expect_same_parameters(dir_ / "a.pt", dir_ / "straight.pt");

  const std::vector<std::string> one_to_two = {"--checkpoint-dir", dir_ / "ckpt-b"};
  first = one_to_two;
  first.insert(first.end(), {"--max-steps", "7"});  // inside the first epoch
  run_ranks(train(data, 16, "b1", first), 1);
  second = one_to_two;
  second.insert(second.end(), {"--resume", "--save-model", dir_ / "b.pt"});
  const RanksRun resumed = run_ranks(train(data, 8, "b2", second), 2);
  expect_same_parameters(dir_ / "b.pt", dir_ / "straight.pt");
  EXPECT_NE(resumed.outputs[0].find("resuming from"), std::string::npos) << resumed.outputs[0];
  EXPECT_EQ(resumed.outputs[1], "");  // rank 0 alone prints

  // The same world size with another per-rank batch is another global batch: refused.
  second = one_to_two;
  second.insert(second.end(), {"--resume", "--epochs", "3"});
  RanksSpec spec;
  spec.argv = train(data, 16, "b3", second);
  spec.world_size = 2;
  spec.timeout = std::chrono::minutes(2);
  const RanksRun refused = testing::run_ranks(spec, dir_);
  EXPECT_EQ(refused.outcome.exit_codes, (std::vector<int>{1, 1}));
  EXPECT_NE(refused.outputs[0].find("global batch size 16 (this run: 32)"), std::string::npos)
      << refused.outputs[0];
}

// Watches a distributed `stoker train` that runs until stopped: starts it, waits for its first
// step record.
class LongRun {
 public:
  LongRun(const std::vector<std::string>& args, int world_size, const testing::TempDir& dir,
          const std::string& log) {
    const int port = testing::free_port();
    for (int r = 0; r < world_size; ++r) {
      ChildSpec spec;
      spec.argv = args;
      spec.env = {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(world_size),
                  "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)};
      spec.output_path = dir / ("long-" + std::to_string(r) + ".txt");
      throw_if_error(ranks_.start(spec));
      outputs_.push_back(spec.output_path);
    }
    const Clock::time_point start = Clock::now();
    while (log_records_or_none(log) == 0 && seconds_since(start) < 60)
      std::this_thread::sleep_for(milliseconds(20));
  }
  ChildGroup& ranks() { return ranks_; }
  std::string output(int r) const { return read_file(outputs_[r]).value_or_throw(); }

 private:
  static size_t log_records_or_none(const std::string& log) {
    Result<std::string> text = read_file(log);
    return text.is_ok() ? std::count(text.value().begin(), text.value().end(), '\n') : 0;
  }
  ChildGroup ranks_;
  std::vector<std::string> outputs_;
};

// Issue 13, test 4: a rank killed mid-run makes its peer exit 1 with one clear line soon after
// (its connection closes); a rank that hangs (stopped) makes it exit within --dist-timeout.
TEST_F(DistTrainCliTest, APeerKilledOrHangingEndsTheRunWithinTheTimeout) {
  const std::string data = write_data(160, 57);
  for (const int signal : {SIGKILL, SIGSTOP}) {
    const std::string log = dir_ / fmt::format("long-{}.jsonl", signal);
    std::vector<std::string> args =
        train(data, 8, fmt::format("long-{}", signal),
              {"--epochs", "100000", "--log-every", "1", "--dist-timeout", "4"});
    LongRun run(args, 2, dir_, log);
    ::kill(run.ranks().pid(1), signal);
    // The grace lets rank 0 end by itself after rank 1's death; then the stopped one is killed.
    const ChildOutcome outcome = run.ranks().wait(std::chrono::minutes(1), std::chrono::seconds(3));
    const double seconds = outcome.exit_seconds[0];  // from the signal, about
    EXPECT_EQ(outcome.exit_codes[0], 1) << run.output(0);
    const std::string out = run.output(0);
    const std::string err = out.substr(std::min(out.size(), out.find("stoker: ")));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("stoker: rank 0 of 2: "), std::string::npos) << err;
    if (signal == SIGKILL) {
      EXPECT_NE(err.find("(a peer rank exited)"), std::string::npos) << err;
      EXPECT_LT(seconds, 4);
    } else {
      EXPECT_NE(err.find("did not answer within the 4 s timeout"), std::string::npos) << err;
      EXPECT_GE(seconds, 3.5);
      EXPECT_LT(seconds, 12);
    }
  }
}

// `--nproc 2` starts two local ranks over c10d: the same model as one process of twice the
// batch. A SIGINT to it stops both ranks after the same step: a checkpoint, exit code 130.
TEST_F(DistTrainCliTest, NprocStartsLocalRanks) {
  const std::string data = write_data(160, 57);
  run_ranks(train(data, 16, "one", {"--save-model", dir_ / "one.pt"}), 1);
  const Result<ProcessResult> nproc = run_process(
      train(data, 8, "nproc",
            {"--nproc", "2", "--save-model", dir_ / "nproc.pt", "--report", dir_ / "report"}));
  ASSERT_TRUE(nproc.is_ok());
  ASSERT_EQ(nproc.value().exit_code, 0) << nproc.value().err;
  EXPECT_EQ(nproc.value().err, "");
  EXPECT_NE(nproc.value().out.find(", 2 ranks over gloo"), std::string::npos)
      << nproc.value().out;  // the CPU: gloo, the default
  expect_same_parameters(dir_ / "nproc.pt", dir_ / "one.pt");
  // Rank 0's report: both ranks' batches, and the all-reduce time backward did not hide, per
  // step of the 2 epochs of 160 / 16 steps, as logged.
  const nlohmann::json report = testing::read_report(dir_ / "report");
  EXPECT_EQ(testing::report_facts(report).at("batch"), "8 per rank, 2 ranks");
  const nlohmann::json& split = report.at("split");
  ASSERT_EQ(split.size(), 4u) << split.dump();
  EXPECT_EQ(split[3].at("name"), "all-reduce not hidden by backward");
  double exposed = 0, compute = 0;
  for (const nlohmann::json& e : epochs("nproc")) {
    exposed += e.at("allreduce_exposed_seconds").get<double>();
    compute += e.at("compute_seconds").get<double>();
  }
  EXPECT_NEAR(split[3].at("seconds").get<double>() * 20, exposed, 1e-9);
  EXPECT_NEAR(split[2].at("seconds").get<double>() * 20, compute - exposed, 1e-9);

  ChildGroup parent;
  ASSERT_TRUE(parent
                  .start({train(data, 8, "interrupted",
                                {"--nproc", "2", "--epochs", "100000", "--log-every", "1",
                                 "--checkpoint-dir", dir_ / "ckpt"}),
                          {},
                          dir_ / "interrupted.txt"})
                  .is_ok());
  const Clock::time_point start = Clock::now();
  while (log_records(dir_ / "interrupted.jsonl", "step").empty() && seconds_since(start) < 60)
    std::this_thread::sleep_for(milliseconds(20));
  ::kill(parent.pid(0), SIGINT);
  const ChildOutcome outcome = parent.wait(std::chrono::minutes(1), std::chrono::minutes(1));
  const std::string out = read_file(dir_ / "interrupted.txt").value_or_throw();
  EXPECT_EQ(outcome.exit_codes[0], 130) << out;
  EXPECT_NE(out.find("stoker: interrupted in epoch"), std::string::npos) << out;
  EXPECT_NE(out.find("stoker: rank 1: interrupted in epoch"), std::string::npos) << out;
  const Result<FoundCheckpoint> found = find_checkpoint(dir_ / "ckpt");
  ASSERT_TRUE(found.is_ok()) << found.status().message();
  EXPECT_GT(found.value().state.step, 0);
}

// Ranks given different runs, or resuming from different checkpoints (a checkpoint directory
// that is not shared), fail before training, saying what differs.
TEST_F(DistTrainCliTest, RanksThatDifferAreNamed) {
  const std::string data = write_data(160, 57);
  // Rank 0's checkpoint directory holds a checkpoint of step 3, rank 1's nothing.
  run_ranks(train(data, 16, "first", {"--checkpoint-dir", dir_ / "ckpt0", "--max-steps", "3"}), 1);
  struct Case {
    std::string rank_option;  // differs per rank: $RANK is 0 or 1
    std::string words;
  } cases[] = {{"--batch $((8 + 8 * RANK))",
                "the ranks differ in batch size (from 8 to 16): "
                "every rank must be given the same data, model and "
                "options"},
               {"--checkpoint-dir " + dir_.path() + "/ckpt$RANK --resume",
                "the ranks differ in step (from 0 to 3): every rank must resume from the same "
                "checkpoint, so --checkpoint-dir must be a directory they all share"}};
  for (const Case& c : cases) {
    std::string command = "exec";
    for (const std::string& arg : train(data, 8, "differ")) command += " '" + arg + "'";
    RanksSpec spec;
    spec.argv = {"/bin/sh", "-c", command + " " + c.rank_option};
    spec.timeout = std::chrono::minutes(2);
    const RanksRun run = testing::run_ranks(spec, dir_);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(run.outcome.exit_codes[r], 1) << run.outputs[r];
      EXPECT_NE(run.outputs[r].find(fmt::format("stoker: rank {}: {}", r, c.words)),
                std::string::npos)
          << run.outputs[r];
    }
  }
}

TEST_F(DistTrainCliTest, NprocUnderALauncherIsAUsageError) {
  RanksSpec spec;
  spec.argv = {testing::kStokerCliPath, "train", "--nproc", "2"};
  spec.world_size = 2;
  spec.ranks = {1};  // never connects: the option is refused first
  const RanksRun run = testing::run_ranks(spec, dir_);
  EXPECT_EQ(run.outcome.exit_codes, (std::vector<int>{2}));
  EXPECT_EQ(run.outputs[0],
            "stoker: --nproc: this process is already rank 1 of 2 (torchrun started it): leave "
            "--nproc out\n");
}

// Issue 13, test 6: two torchrun agents on this machine as two "nodes" (c10d rendezvous), one
// rank each: the ranks connect to the agent's store and train like one process of twice the
// batch.
TEST_F(DistTrainCliTest, TwoTorchrunAgentsAsTwoNodes) {
  const Result<ProcessResult> probe =
      run_process({STOKER_PYTHON, "-c", "import torch.distributed.run"});
  if (!probe.is_ok() || probe.value().exit_code != 0)
    GTEST_SKIP() << "no " STOKER_PYTHON " with torch";
  const std::string data = write_data(160, 57);
  run_ranks(train(data, 16, "one", {"--save-model", dir_ / "one.pt"}), 1);
  const int port = testing::free_port();
  ChildGroup agents;
  for (int node = 0; node < 2; ++node) {
    ChildSpec agent;
    agent.argv = {STOKER_PYTHON,
                  "-m",
                  "torch.distributed.run",
                  "--no_python",
                  "--nnodes",
                  "2",
                  "--node_rank",
                  std::to_string(node),
                  "--nproc_per_node",
                  "1",
                  "--rdzv_backend",
                  "c10d",
                  "--rdzv_endpoint",
                  fmt::format("127.0.0.1:{}", port),
                  "--rdzv_id",
                  "stoker-test",
                  "--redirects",
                  "1",
                  "--tee",
                  "1",
                  "--"};  // torchrun's options end: its parser would take --log for --log-dir
    const std::vector<std::string> args =
        train(data, 8, "agents", {"--save-model", dir_ / "agents.pt"});
    agent.argv.insert(agent.argv.end(), args.begin(), args.end());
    agent.output_path = dir_ / fmt::format("agent-{}.txt", node);
    ASSERT_TRUE(agents.start(agent).is_ok());
  }
  const ChildOutcome outcome = agents.wait(std::chrono::minutes(2), std::chrono::seconds(30));
  const std::string out0 = read_file(dir_ / "agent-0.txt").value_or_throw();
  const std::string out1 = read_file(dir_ / "agent-1.txt").value_or_throw();
  ASSERT_EQ(outcome.exit_codes, (std::vector<int>{0, 0})) << out0 << out1;
  expect_same_parameters(dir_ / "agents.pt", dir_ / "one.pt");
  EXPECT_EQ(log_records(dir_ / "agents.jsonl", "run").at(0)["config"]["world_size"], 2);
}

}  // namespace
}  // namespace stoker
