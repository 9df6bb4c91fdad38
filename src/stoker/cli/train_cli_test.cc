// `stoker train` end to end: a run with its outputs, the embedded default, SIGINT with a
// checkpoint and an exact resume, and bad inputs giving one line on stderr and exit code 1.
#include <ATen/TensorOperators.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "stoker/store/dataset_writer.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/store/manifest.h"
#include "stoker/store/record_encoder.h"
#include "stoker/testing/chrome_trace_check.h"
#include "stoker/testing/classification.h"
#include "stoker/testing/cli_process.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/records.h"
#include "stoker/testing/report_json.h"
#include "stoker/testing/script_models.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/train_outputs.h"
#include "stoker/train/checkpoint.h"
#include "stoker/train/models.h"
#include "stoker/train/slow_configs.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/machine.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// A running `stoker train ARGS`.
class Cli : public testing::CliProcess {
 public:
  Cli(std::vector<std::string> args, const testing::TempDir& dir,
      const std::vector<std::string>& env = {})
      : CliProcess(with_command("train", std::move(args)), dir, env) {}
};

using testing::expect_one_line_error;

using testing::log_records;
using testing::saved_parameters;

class TrainCliTest : public ::testing::Test {
 protected:
  void write_data(const std::string& name, int64_t train_records) {
    testing::write_rows_dataset(dir_ / (name + "/train"), train_records, 1);
    testing::write_rows_dataset(dir_ / (name + "/test"), 500, 2);
  }
  // `args` followed by `more`.
  static std::vector<std::string> with(std::vector<std::string> args,
                                       const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  testing::TempDir dir_;
};

TEST_F(TrainCliTest, TrainsWithLogCheckpointAndSavedModel) {
  write_data("data", 2000);
  Cli cli({"--data", dir_ / "data", "--epochs", "2", "--batch", "32", "--log", dir_ / "log.jsonl",
           "--checkpoint-dir", dir_ / "ckpt", "--save-model", dir_ / "model.pt"},
          dir_);
  ASSERT_EQ(cli.wait(), 0) << cli.err();
  EXPECT_EQ(cli.err(), "");
  const std::string out = cli.out();
  EXPECT_EQ(out.find('\r'), std::string::npos) << "no progress bar when stdout is not a terminal";
  EXPECT_NE(out.find("epoch 1/2  train loss "), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 2/2  train loss "), std::string::npos) << out;
  EXPECT_NE(out.find("(data "), std::string::npos) << out;
  EXPECT_NE(out.find("trained mlp: 2 epochs, 126 steps"), std::string::npos) << out;

  const std::vector<nlohmann::json> epochs = log_records(dir_ / "log.jsonl", "epoch");
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[1]["epoch"], 2);
  EXPECT_GT(epochs[1]["test_accuracy"].get<double>(), 0.9);
  EXPECT_TRUE(latest_checkpoint(dir_ / "ckpt").is_ok());
  EXPECT_EQ(saved_parameters(dir_ / "model.pt").size(), 6u);  // it loads: 3 layers' weight, bias
}

TEST_F(TrainCliTest, TraceHasEveryStageFromItsThreadsNested) {
  write_data("data", 2000);
  Cli cli({"--data", dir_ / "data", "--epochs", "2", "--batch", "32", "--workers", "2",
           "--checkpoint-dir", dir_ / "ckpt", "--trace", dir_ / "trace.json"},
          dir_);
  ASSERT_EQ(cli.wait(), 0) << cli.err();
  const nlohmann::json doc = nlohmann::json::parse(read_file(dir_ / "trace.json").value_or_throw());
  EXPECT_EQ(testing::nesting_error(doc), "");
  EXPECT_EQ(doc.at("otherData").at("dropped_events"), 0);
  const std::map<int64_t, std::string> names = testing::thread_names(doc);
  // Span counts by thread name, category and name.
  std::map<std::string, std::map<std::string, int>> counts;
  for (const auto& [tid, spans] : testing::spans_by_thread(doc)) {
    for (const nlohmann::json& span : spans) {
      ++counts[names.at(tid)]
              [span.at("cat").get<std::string>() + "/" + span.at("name").get<std::string>()];
    }
  }
  // The training thread (the process's main thread: its name is the program's).
  const std::map<std::string, int>& main = counts.at("stoker");
  const int steps = 2 * 63;  // 2000 samples in batches of 32
  EXPECT_EQ(main.at("train/forward"), steps);
  EXPECT_EQ(main.at("train/backward"), steps);
  EXPECT_EQ(main.at("train/optimizer"), steps);
  EXPECT_EQ(main.at("train/data"), steps + 2);     // the first batch, then one per batch
  EXPECT_EQ(main.at("train/h2d"), steps + 2 * 2);  // and the two evaluations' batches
  EXPECT_EQ(main.at("train/eval"), 2);
  EXPECT_EQ(main.at("train/checkpoint"), 2);
  EXPECT_EQ(main.count("train/allreduce_wait"), 0u);
  EXPECT_EQ(main.count("pipeline/piece"), 0u);
  // Batches are built by the loaders' workers.
  const std::map<std::string, int>& workers = counts.at("stoker-worker");
  EXPECT_GE(workers.at("pipeline/piece"), 2 * (steps + 2 * 2));
  EXPECT_EQ(workers.at("pipeline/read"), workers.at("pipeline/piece"));
  EXPECT_EQ(workers.at("pipeline/transform"), workers.at("pipeline/piece"));
  EXPECT_GE(workers.at("pipeline/finalize"), steps + 2 * 2);
  for (const auto& [name, count] : workers) EXPECT_EQ(name.rfind("pipeline/", 0), 0u) << name;
  EXPECT_EQ(counts.size(), 2u);
}

TEST_F(TrainCliTest, ReportHasTheRunsFactsSplitAndCurves) {
  write_data("data", 2000);
  Cli cli({"--data", dir_ / "data", "--epochs", "2", "--batch", "32", "--workers", "2", "--log",
           dir_ / "log.jsonl", "--report", dir_ / "report"},
          dir_);
  ASSERT_EQ(cli.wait(), 0) << cli.err();
  const std::string html = read_file(dir_ / "report/index.html").value_or_throw();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  const nlohmann::json report = testing::read_report(dir_ / "report");
  EXPECT_EQ(report.at("title"), "stoker train");
  const std::string command = report.at("command");
  EXPECT_EQ(command.rfind("stoker train --data ", 0), 0u) << command;
  EXPECT_NE(command.find("--report " + dir_ / "report"), std::string::npos) << command;
  const std::map<std::string, std::string> facts = testing::report_facts(report);
  EXPECT_EQ(facts.at("data"), dir_ / "data");
  EXPECT_EQ(facts.at("model"), "mlp");
  EXPECT_EQ(facts.at("epochs"), "2");
  EXPECT_EQ(facts.at("batch"), "32");
  EXPECT_EQ(facts.at("workers"), "2");
  EXPECT_EQ(facts.at("device"), "cpu");
  EXPECT_EQ(facts.count("device memory"), 0u);  // counted on CUDA devices only
  EXPECT_EQ(facts.at("amp"), "off");
  EXPECT_EQ(facts.count("stopped"), 0u);
  EXPECT_EQ(report.at("verdict"), "");  // the doctor's to give

  // The split per step is the logged epochs' times over their 2 x 63 steps.
  const std::vector<nlohmann::json> epochs = log_records(dir_ / "log.jsonl", "epoch");
  ASSERT_EQ(epochs.size(), 2u);
  double data = 0, h2d = 0, compute = 0;
  for (const nlohmann::json& e : epochs) {
    data += e.at("data_seconds").get<double>();
    h2d += e.at("h2d_seconds").get<double>();
    compute += e.at("compute_seconds").get<double>();
  }
  const nlohmann::json& split = report.at("split");
  ASSERT_EQ(split.size(), 3u) << split.dump();
  EXPECT_EQ(split[0].at("name"), "data wait");
  EXPECT_NEAR(split[0].at("seconds").get<double>() * 126, data, 1e-9);
  EXPECT_EQ(split[1].at("name"), "host to device");
  EXPECT_NEAR(split[1].at("seconds").get<double>() * 126, h2d, 1e-9);
  EXPECT_NEAR(split[2].at("seconds").get<double>() * 126, compute, 1e-9);

  // Charts: throughput over time, the loss and accuracy per epoch as logged.
  std::map<std::string, nlohmann::json> charts;
  for (const nlohmann::json& chart : report.at("charts")) charts[chart.at("title")] = chart;
  ASSERT_EQ(charts.size(), 3u);
  for (const nlohmann::json& point : charts.at("Throughput over time")["series"][0]["points"]) {
    EXPECT_GT(point[0].get<double>(), 0);
    EXPECT_GT(point[1].get<double>(), 0);
  }
  const nlohmann::json& loss = charts.at("Loss")["series"];
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_EQ(loss[0]["name"], "train");
  EXPECT_EQ(loss[1]["name"], "test");
  const nlohmann::json& accuracy = charts.at("Test accuracy")["series"][0]["points"];
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(loss[0]["points"][e], nlohmann::json({e + 1, epochs[e]["train_loss"]}));
    EXPECT_EQ(loss[1]["points"][e], nlohmann::json({e + 1, epochs[e]["test_loss"]}));
    EXPECT_DOUBLE_EQ(accuracy[e][1].get<double>(), 100 * epochs[e]["test_accuracy"].get<double>());
  }
}

TEST_F(TrainCliTest, ReportDirectoryIsCheckedBeforeTraining) {
  write_data("data", 300);
  ASSERT_TRUE(write_file_atomically(dir_ / "file", "x").is_ok());
  const Cli file({"--data", dir_ / "data", "--report", dir_ / "file"}, dir_);
  expect_one_line_error(file, "--report: " + dir_ / "file" + ": not a directory");
  EXPECT_EQ(file.out().find("epoch"), std::string::npos) << file.out();
  const Cli below({"--data", dir_ / "data", "--report", dir_ / "file/report"}, dir_);
  expect_one_line_error(below, "--report: cannot create report directory " + dir_ / "file/report");
  EXPECT_EQ(below.out().find("epoch"), std::string::npos) << below.out();
}

// --trace-ops: LibTorch's operators on their own track, on the trace's clock: the forward
// pass's matrix products inside the forward spans, the backward pass's inside the backward ones.
TEST_F(TrainCliTest, TraceOpsAddsLibTorchsOperatorsAlignedWithTheSteps) {
  write_data("data", 320);
  Cli cli({"--data", dir_ / "data", "--epochs", "1", "--batch", "32", "--no-eval", "--trace",
           dir_ / "trace.json", "--trace-ops"},
          dir_);
  ASSERT_EQ(cli.wait(), 0) << cli.err();
  const nlohmann::json doc = nlohmann::json::parse(read_file(dir_ / "trace.json").value_or_throw());
  EXPECT_EQ(testing::nesting_error(doc), "");
  const std::map<int64_t, std::string> names = testing::thread_names(doc);
  std::vector<nlohmann::json> forward, backward, addmm, mm;
  for (const auto& [tid, spans] : testing::spans_by_thread(doc)) {
    for (const nlohmann::json& span : spans) {
      const std::string name = span.at("name");
      if (span.at("cat") == "op") {
        EXPECT_EQ(names.at(tid).rfind("libtorch ops, thread ", 0), 0u) << names.at(tid);
        if (name == "aten::addmm") addmm.push_back(span);
        if (name == "aten::mm") mm.push_back(span);
      } else if (name == "forward") {
        forward.push_back(span);
      } else if (name == "backward") {
        backward.push_back(span);
      }
    }
  }
  ASSERT_EQ(forward.size(), 10u);
  ASSERT_EQ(backward.size(), 10u);
  auto inside_one_of = [](const nlohmann::json& op, const std::vector<nlohmann::json>& spans) {
    const double start = op.at("ts").get<double>(), end = start + op.at("dur").get<double>();
    return std::any_of(spans.begin(), spans.end(), [&](const nlohmann::json& s) {
      const double s_start = s.at("ts").get<double>();
      return s_start - 1 <= start && end <= s_start + s.at("dur").get<double>() + 1;
    });
  };
  EXPECT_EQ(addmm.size(), 3u * 10);  // the mlp's three linear layers
  for (const nlohmann::json& op : addmm) EXPECT_TRUE(inside_one_of(op, forward)) << op.dump();
  EXPECT_GE(mm.size(), 10u);
  for (const nlohmann::json& op : mm) EXPECT_TRUE(inside_one_of(op, backward)) << op.dump();
  // Without --trace there is nothing to add the operators to.
  Cli alone({"--data", dir_ / "data", "--trace-ops"}, dir_);
  EXPECT_EQ(alone.wait(), 2);
}

TEST_F(TrainCliTest, WithoutDataConvertsFashionMnistFirst) {
  ASSERT_TRUE(fs::is_directory(kFashionMnistDebianDir)) << "scripts/setup.sh installs it";
  Cli cli({"--max-steps", "20"}, dir_, {"STOKER_DATA=" + (dir_ / "data-root")});
  ASSERT_EQ(cli.wait(), 0) << cli.err();
  const std::string out = cli.out();
  EXPECT_NE(out.find("converting Fashion-MNIST"), std::string::npos) << out;
  // Normalised with the statistics computed at conversion: Fashion-MNIST's well-known ones.
  EXPECT_NE(out.find("training mlp on " + (dir_ / "data-root/fashion-mnist/train") +
                     " (60000 samples, 10 classes; mean 0.2860 std 0.3530 from the data's "
                     "manifest) for 5 epochs: batch 64, adam lr 0.001"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("stopped mlp: 0 epochs, 20 steps"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir_ / "data-root/fashion-mnist/test/manifest.json"));
}

TEST_F(TrainCliTest, NormalisationIsTheTrainingDatasOwnUnlessGiven) {
  write_data("data", 300);
  const FieldStatistics stats =
      Manifest::load(dir_ / "data/train").value_or_throw().statistics.at("image");
  const std::vector<std::string> common = {"--data", dir_ / "data", "--max-steps", "2"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  Cli own(with({"--log", dir_ / "own.jsonl"}), dir_);
  ASSERT_EQ(own.wait(), 0) << own.err();
  EXPECT_NE(
      own.out().find(fmt::format("4 classes; mean {:.4f} std {:.4f} from the data's manifest)",
                                 stats.mean[0], stats.std[0])),
      std::string::npos)
      << own.out();
  const nlohmann::json run = log_records(dir_ / "own.jsonl", "run").at(0);
  EXPECT_EQ(run["config"]["mean"], std::vector<float>{static_cast<float>(stats.mean[0])});
  EXPECT_EQ(run["config"]["std"], std::vector<float>{static_cast<float>(stats.std[0])});
  EXPECT_EQ(run["config"]["mean_from"], "data");

  Cli given(with({"--mean", "0.5", "--std", "0.25", "--log", dir_ / "given.jsonl"}), dir_);
  ASSERT_EQ(given.wait(), 0) << given.err();
  EXPECT_NE(given.out().find("4 classes; mean 0.5000 std 0.2500 from --mean/--std)"),
            std::string::npos)
      << given.out();
  const nlohmann::json given_run = log_records(dir_ / "given.jsonl", "run").at(0);
  EXPECT_EQ(given_run["config"]["mean"], std::vector<float>{0.5f});
  EXPECT_EQ(given_run["config"]["std_from"], "option");

  // A dataset converted by an older stoker: the old default, said in one line before training.
  Manifest old = Manifest::load(dir_ / "data/train").value_or_throw();
  old.statistics.clear();
  throw_if_error(old.save(dir_ / "data/train"));
  Cli without(common, dir_);
  ASSERT_EQ(without.wait(), 0) << without.err();
  const std::string out = without.out();
  const std::string warning = "warning: " + dir_ / "data/train" +
                              " has no normalisation statistics in its manifest (converted by an "
                              "older stoker, or its images are constant): normalising with "
                              "Fashion-MNIST's mean/std; convert it again with this stoker to "
                              "compute them, or pass --mean/--std\n";
  EXPECT_NE(out.find(warning), std::string::npos) << out;
  EXPECT_LT(out.find(warning), out.find("training mlp on")) << out;
  EXPECT_NE(out.find("mean 0.2860 std 0.3530 from Fashion-MNIST's defaults"), std::string::npos)
      << out;
}

TEST_F(TrainCliTest, StatisticsOutOfRangeAreRefusedNamingTheManifest) {
  write_data("data", 50);
  const std::string manifest = dir_ / "data/train/manifest.json";
  nlohmann::json j = nlohmann::json::parse(read_file(manifest).value_or_throw());
  j["statistics"]["image"]["std"] = {0};
  throw_if_error(write_file_atomically(manifest, j.dump()));
  Cli cli({"--data", dir_ / "data", "--log", dir_ / "log.jsonl"}, dir_);
  expect_one_line_error(
      cli, manifest + ": statistics of \"image\": 'std' of channel 0 is 0, not in (0, 0.5]");
  EXPECT_FALSE(fs::exists(dir_ / "log.jsonl"));
}

// A std far below any that its pixels can have (1e-30: inputs 10^28 times too large) is refused
// before training, naming the manifest.
TEST_F(TrainCliTest, AStdNoPixelsCanHaveIsRefusedNamingTheManifest) {
  write_data("data", 50);
  const std::string manifest = dir_ / "data/train/manifest.json";
  nlohmann::json j = nlohmann::json::parse(read_file(manifest).value_or_throw());
  j["statistics"]["image"]["std"] = {1e-30};
  throw_if_error(write_file_atomically(manifest, j.dump()));
  Cli cli({"--data", dir_ / "data", "--epochs", "1"}, dir_);
  expect_one_line_error(cli, manifest +
                                 ": statistics of \"image\": 'std' of channel 0 is 1e-30, "
                                 "below ");
  EXPECT_EQ(cli.out().find("epoch 1"), std::string::npos) << cli.out();
}

TEST_F(TrainCliTest, SigintCheckpointsAndResumeEqualsAStraightRun) {
  write_data("data", 20000);
  const std::vector<std::string> common = {"--data", dir_ / "data", "--batch",
                                           "16",     "--workers",   "1"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };

  // The same --epochs in every run: the default cosine schedule spans the whole run.
  Cli interrupted(with({"--epochs", "3", "--checkpoint-dir", dir_ / "a", "--log", dir_ / "a.jsonl",
                        "--report", dir_ / "report"}),
                  dir_);
  ASSERT_TRUE(interrupted.wait_for_output("epoch 1/3  train loss")) << interrupted.err();
  interrupted.signal(SIGINT);
  EXPECT_EQ(interrupted.wait(), 130) << interrupted.err();
  const std::string err = interrupted.err();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("interrupted in epoch "), std::string::npos) << err;
  EXPECT_NE(err.find("continue with --resume"), std::string::npos) << err;
  const std::string checkpoint = latest_checkpoint(dir_ / "a").value_or_throw();
  EXPECT_NE(err.find(checkpoint), std::string::npos) << err;
  const nlohmann::json meta =
      nlohmann::json::parse(read_file(checkpoint + "/meta.json").value_or_throw());
  ASSERT_LT(meta["loader"]["epoch"].get<int64_t>(), 3) << "stopped too late for this test";
  // The interrupted run's report: written, with the epochs it finished.
  const nlohmann::json report = testing::read_report(dir_ / "report");
  EXPECT_EQ(testing::report_facts(report).at("stopped").rfind("on request, in epoch ", 0), 0u);
  EXPECT_EQ(report.at("charts")[1]["series"][0]["points"].size(),
            log_records(dir_ / "a.jsonl", "epoch").size());

  Cli resumed(with({"--epochs", "3", "--checkpoint-dir", dir_ / "a", "--resume", "--save-model",
                    dir_ / "resumed.pt", "--log", dir_ / "a.jsonl"}),
              dir_);
  ASSERT_EQ(resumed.wait(), 0) << resumed.err();
  EXPECT_NE(resumed.out().find("resuming from " + checkpoint), std::string::npos);
  // The log holds each epoch once, and the epoch resumed mid-way reports all its samples.
  std::vector<int64_t> epochs;
  for (const nlohmann::json& record : log_records(dir_ / "a.jsonl", "epoch")) {
    epochs.push_back(record["epoch"]);
    EXPECT_EQ(record["samples"], 20000) << record.dump();
  }
  EXPECT_EQ(epochs, (std::vector<int64_t>{1, 2, 3}));
  Cli straight(with({"--epochs", "3", "--save-model", dir_ / "straight.pt"}), dir_);
  ASSERT_EQ(straight.wait(), 0) << straight.err();

  const std::vector<at::Tensor> a = saved_parameters(dir_ / "resumed.pt");
  const std::vector<at::Tensor> b = saved_parameters(dir_ / "straight.pt");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE((a[i] - b[i]).abs().max().item<double>(), 1e-6) << "tensor " << i;
  }
}

// --workers auto moves the worker count while training: the batches, hence the parameters, are
// those of --workers 1 (docs/DESIGN.md contract 1), and the run says what the tuner chose.
TEST_F(TrainCliTest, WorkersAutoTrainsTheSameParametersAsOneWorker) {
  write_data("data", 3000);
  auto train = [&](const std::string& workers, const std::string& model) {
    return Cli({"--data", dir_ / "data", "--epochs", "2", "--batch", "16", "--workers", workers,
                "--save-model", dir_ / model, "--log", dir_ / (model + ".jsonl")},
               dir_);
  };
  Cli one = train("1", "one.pt");
  ASSERT_EQ(one.wait(), 0) << one.err();
  Cli tuned = train("auto", "auto.pt");
  ASSERT_EQ(tuned.wait(), 0) << tuned.err();
  const std::vector<at::Tensor> a = saved_parameters(dir_ / "one.pt");
  const std::vector<at::Tensor> b = saved_parameters(dir_ / "auto.pt");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << "tensor " << i;
  const std::string out = tuned.out();
  EXPECT_NE(out.find(", auto workers, "), std::string::npos) << out;
  // Said once: after the epoch it settled in, or at the end. Whether it settled, and the
  // rates it measured, depend on the machine's load (a loaded machine may end the run before
  // the first trial is measured): "settled after N batches" or "not settled after N batches",
  // nothing more is asserted. How fast it settles is a benchmark's question.
  const size_t said = out.find("workers auto: ");
  ASSERT_NE(said, std::string::npos) << out;
  EXPECT_EQ(out.find("workers auto: ", said + 1), std::string::npos) << out;
  EXPECT_NE(out.find("settled after ", said), std::string::npos) << out;
  EXPECT_EQ(one.out().find("workers auto: "), std::string::npos);
  EXPECT_EQ(log_records(dir_ / "auto.pt.jsonl", "run").at(0)["config"]["workers"], "auto");
}

// Options that are each in range but do not go together are named as given on the command
// line, never by the library's field names (total_steps, min_lr, field 'image': crop ratio).
TEST_F(TrainCliTest, OptionsThatContradictEachOtherAreNamedAsGiven) {
  write_data("data", 300);  // 5 steps of 64 per epoch
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {"--lr 0.01 --min-lr 0.1", 2, "--min-lr 0.1 is above --lr 0.01"},
      {"--optimizer sgd --momentum 1", 2, "--momentum must be below 1, not 1"},
      {"--momentum 0.9", 2, "--momentum and --nesterov apply to --optimizer sgd, not adam"},
      {"--optimizer sgd --nesterov", 2, "--nesterov needs --momentum above 0"},
      {"--crop-ratio-min 2 --crop-ratio-max 1", 2,
       "--crop-ratio-min 2 is above --crop-ratio-max 1"},
      {"--warmup 100", 1,
       "--warmup 100 is not shorter than the run: --epochs 1 of 5 optimizer steps are 5 steps"},
  };
  for (const auto& [options, code, words] : cases) {
    const testing::RunResult r =
        testing::run("train --data " + dir_ / "data" + " --epochs 1 " + options, dir_);
    expect_one_line_error(r, words);
    EXPECT_EQ(r.exit_code, code) << words;
    for (const char* internal : {"total_steps", "min_lr", "field '", "momentum ="})
      EXPECT_EQ(r.err.find(internal), std::string::npos) << r.err;
  }
}

TEST_F(TrainCliTest, BadInputsGiveOneLineAndExitOne) {
  write_data("data", 300);
  const std::string data = dir_ / "data";
  std::ofstream(dir_ / "junk.pt") << "junk";
  expect_one_line_error(Cli({"--data", data, "--model", dir_ / "junk.pt"}, dir_),
                        "cannot load TorchScript model '" + (dir_ / "junk.pt") + "'");
  expect_one_line_error(Cli({"--data", dir_ / "none"}, dir_), dir_ / "none");
  std::ofstream(dir_ / "file") << "x";
  expect_one_line_error(Cli({"--data", data, "--checkpoint-dir", dir_ / "file/ckpt"}, dir_),
                        "cannot create checkpoint directory '" + (dir_ / "file/ckpt") + "'");

  testing::write_rows_dataset(dir_ / "labels/train", 100, 1, {"a", "b"},
                              [](int64_t i) { return i == 42 ? 2 : i % 2; });
  testing::write_rows_dataset(dir_ / "labels/test", 10, 2, {"a", "b"}, [](int64_t i) { return 0; });
  expect_one_line_error(Cli({"--data", dir_ / "labels"}, dir_),
                        "record 42 has label 2, outside the model's 2 classes");

  write_data("corrupt", 300);
  auto [shard, offset] = testing::record_location(dir_ / "corrupt/train", 77);
  testing::flip_byte(shard, offset + 2);
  expect_one_line_error(Cli({"--data", dir_ / "corrupt"}, dir_), "record 77");

  // A good checkpoint, then a resumed run whose loss goes NaN (a learning rate that throws the
  // weights to infinity in one step): an error naming the step, and the checkpoint stays as it
  // was.
  Cli good({"--data", data, "--epochs", "1", "--batch", "16", "--optimizer", "sgd", "--lr", "0.1",
            "--checkpoint-dir", dir_ / "ckpt"},
           dir_);
  ASSERT_EQ(good.wait(), 0) << good.err();
  const std::string checkpoint = latest_checkpoint(dir_ / "ckpt").value_or_throw();
  const std::string meta = read_file(checkpoint + "/meta.json").value_or_throw();
  expect_one_line_error(
      Cli({"--data", data, "--epochs", "3", "--batch", "16", "--optimizer", "sgd", "--lr", "1e38",
           "--checkpoint-dir", dir_ / "ckpt", "--resume", "--override"},
          dir_),
      "training stopped: loss is NaN at epoch 2, batch 2, step 21");
  EXPECT_EQ(latest_checkpoint(dir_ / "ckpt").value_or_throw(), checkpoint);
  EXPECT_EQ(read_file(checkpoint + "/meta.json").value_or_throw(), meta);
}

// The log starts with a run record a user can keep (resolved configuration, versions, data,
// machine); every record has a time; --log-every adds step records.
TEST_F(TrainCliTest, TheLogKeepsTheRunItsEpochsAndSteps) {
  write_data("data", 300);
  Cli cli({"--data", dir_ / "data", "--epochs", "2", "--batch", "32", "--log", dir_ / "log.jsonl",
           "--log-every", "4"},
          dir_);
  ASSERT_EQ(cli.wait(), 0) << cli.err();
  const std::vector<nlohmann::json> all = log_records(dir_ / "log.jsonl", "");
  ASSERT_GE(all.size(), 3u);
  const nlohmann::json& run = all[0];
  EXPECT_EQ(run["record"], "run");
  EXPECT_EQ(run["config"]["batch_size"], 32);
  EXPECT_EQ(run["config"]["epochs"], 2);
  EXPECT_EQ(run["config"]["optimizer"]["name"], "adam");
  EXPECT_EQ(run["config"]["schedule"]["kind"], "cosine");
  EXPECT_EQ(run["config"]["schedule"]["total_steps"], 20);
  EXPECT_EQ(run["config"]["device"], "cpu");
  EXPECT_EQ(run["config"]["log_every"], 4);
  EXPECT_EQ(run["config"]["ra_reps"], 1);
  EXPECT_EQ(run["data"]["train"], dir_ / "data/train");
  EXPECT_EQ(run["data"]["eval"], dir_ / "data/test");
  EXPECT_EQ(run["data"]["train_records"], 300);
  EXPECT_EQ(run["versions"]["dataset_format"], kDatasetFormatVersion);
  EXPECT_FALSE(run["versions"]["libtorch"].get<std::string>().empty());
  EXPECT_EQ(run["machine"]["cores"], machine_cores());
  EXPECT_GT(run["machine"]["memory_bytes"].get<uint64_t>(), 0u);
  EXPECT_FALSE(run["machine"]["cpu_flags"].empty());
  std::string last_time;
  for (const nlohmann::json& record : all) {
    ASSERT_TRUE(record.contains("time")) << record.dump();
    EXPECT_GE(record["time"].get<std::string>(), last_time);
    last_time = record["time"];
  }
  const std::vector<nlohmann::json> steps = log_records(dir_ / "log.jsonl", "step");
  ASSERT_EQ(steps.size(), 5u);  // 20 steps, one record every 4
  EXPECT_EQ(steps[0]["step"], 4);
  EXPECT_EQ(steps[0]["epoch"], 1);
  EXPECT_EQ(steps[0]["samples"], 4 * 32);
  EXPECT_GT(steps[0]["loss"].get<double>(), 0);
  EXPECT_EQ(steps[4]["step"], 20);
  EXPECT_EQ(steps[4]["epoch"], 2);
  EXPECT_EQ(log_records(dir_ / "log.jsonl", "epoch").size(), 2u);
}

// Outputs that are not regular files or new paths are refused before training (as root, a
// rename over /dev/full would replace the device); a write the system refuses fails the run.
TEST_F(TrainCliTest, OutputsMustBeRegularFilesAndWriteErrorsFailTheRun) {
  write_data("data", 300);
  for (const char* option : {"--save-model", "--log", "--trace"}) {
    expect_one_line_error(
        Cli({"--data", dir_ / "data", "--epochs", "1", option, "/dev/full"}, dir_),
        "/dev/full: a character device, not a regular file: give a new path or a regular file");
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  expect_one_line_error(
      Cli({"--data", dir_ / "data", "--save-model", dir_ / "none/model.pt"}, dir_),
      dir_ / "none/model.pt" + ": cannot create: no such directory");

  // A file size limit stands in for a full disk: the log's third line no longer fits.
  testing::RunResult full =
      testing::run("train --data " + dir_ / "data" + " --epochs 20 --log " + dir_ / "log.jsonl",
                   dir_, "trap '' XFSZ; ulimit -f 1;");
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(
      full.err.find("stoker: cannot write log file '" + (dir_ / "log.jsonl") + "': File too large"),
      std::string::npos)
      << full.err;
}

// After a crash between an epoch's log record and its checkpoint, the resumed run logs that
// epoch once (the crashed run's record of it, and a line torn by the crash, are removed).
TEST_F(TrainCliTest, ResumeKeepsTheLogConsistentWithTheCheckpoint) {
  write_data("data", 300);
  const std::vector<std::string> run = {"--data", dir_ / "data",      "--batch",
                                        "32",     "--checkpoint-dir", dir_ / "ckpt",
                                        "--log",  dir_ / "log.jsonl"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = run;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  Cli first(with({"--epochs", "2"}), dir_);
  ASSERT_EQ(first.wait(), 0) << first.err();
  std::ofstream(dir_ / "log.jsonl", std::ios::app)
      << "{\"record\":\"epoch\",\"epoch\":3,\"epochs\":3,\"steps\":30}\n"
         "{\"record\":\"epoch\",\"epoch\":4,\"ste";
  Cli resumed(with({"--epochs", "3", "--resume"}), dir_);
  ASSERT_EQ(resumed.wait(), 0) << resumed.err();
  std::vector<int64_t> epochs;
  for (const nlohmann::json& record : log_records(dir_ / "log.jsonl", "epoch"))
    epochs.push_back(record["epoch"]);
  EXPECT_EQ(epochs, (std::vector<int64_t>{1, 2, 3}));
}

// A checkpoint continues only the run that wrote it: another optimizer, batch size, shuffle window
// or dataset is refused in one line saying what differs, and the checkpoint stays as it was.
TEST_F(TrainCliTest, ResumeRefusesACheckpointOfAnotherRun) {
  write_data("data", 300);
  write_data("other", 200);
  const std::vector<std::string> run = {"--data", dir_ / "data",      "--epochs",   "1", "--batch",
                                        "32",     "--checkpoint-dir", dir_ / "ckpt"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = run;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  Cli first(run, dir_);
  ASSERT_EQ(first.wait(), 0) << first.err();
  const std::string checkpoint = latest_checkpoint(dir_ / "ckpt").value_or_throw();
  const std::string meta = read_file(checkpoint + "/meta.json").value_or_throw();

  expect_one_line_error(Cli(with({"--resume", "--epochs", "2", "--optimizer", "sgd"}), dir_),
                        "checkpoint " + checkpoint +
                            " belongs to another run: optimizer adam (this run: sgd); resume with "
                            "the same settings or use another checkpoint directory");
  expect_one_line_error(Cli(with({"--resume", "--epochs", "2", "--batch", "16"}), dir_),
                        "batch size 32 (this run: 16)");
  expect_one_line_error(
      Cli(with({"--resume", "--epochs", "2", "--shuffle-window", "2"}), dir_),
      "belongs to another run: --shuffle-window all (this run: 2); resume with the same settings");
  expect_one_line_error(Cli(with({"--resume", "--epochs", "2", "--ra-reps", "3"}), dir_),
                        "belongs to another run: --ra-reps 1 (this run: 3); resume with the same "
                        "settings");
  std::vector<std::string> other = with({"--resume", "--epochs", "2"});
  other[1] = dir_ / "other";
  expect_one_line_error(Cli(other, dir_), "belongs to another run: other training data");
  EXPECT_EQ(latest_checkpoint(dir_ / "ckpt").value_or_throw(), checkpoint);
  EXPECT_EQ(read_file(checkpoint + "/meta.json").value_or_throw(), meta);

  // A damaged LATEST beside a complete checkpoint: resumed from it, with a note.
  std::ofstream(dir_ / "ckpt/LATEST") << "garbage";
  Cli resumed(with({"--resume", "--epochs", "2"}), dir_);
  ASSERT_EQ(resumed.wait(), 0) << resumed.err();
  EXPECT_NE(resumed.out().find("resuming from " + checkpoint), std::string::npos) << resumed.out();
  EXPECT_NE(resumed.out().find("note: " + (dir_ / "ckpt/LATEST") + " names 'garbage'"),
            std::string::npos)
      << resumed.out();
  EXPECT_NE(resumed.out().find("epoch 2/2"), std::string::npos) << resumed.out();
}

// A resume with another --lr (or any setting that changes the updates) is refused in one line
// naming the old and the new value, unless --override, which goes on and says what changed.
TEST_F(TrainCliTest, ResumeWithOtherSettingsNeedsOverride) {
  write_data("data", 300);
  const std::vector<std::string> run = {"--data", dir_ / "data",      "--epochs",   "1", "--batch",
                                        "32",     "--checkpoint-dir", dir_ / "ckpt"};
  Cli first(run, dir_);
  ASSERT_EQ(first.wait(), 0) << first.err();
  const std::string checkpoint = latest_checkpoint(dir_ / "ckpt").value_or_throw();

  expect_one_line_error(
      Cli(with(run, {"--resume", "--epochs", "2", "--lr", "0.5", "--clip-grad", "1", "--augment",
                     "color_jitter:brightness=0.2"}),
          dir_),
      "checkpoint " + checkpoint +
          " was written with other settings: --augment none (this run: "
          "color_jitter:brightness=0.2,contrast=0,saturation=0,hue=0,backend=tensor), "
          "--clip-grad 0 (this run: 1), --lr 0.001 (this run: 0.5); resume "
          "with the same options, or add --override to go on with this run's");
  EXPECT_EQ(latest_checkpoint(dir_ / "ckpt").value_or_throw(), checkpoint);
  const testing::RunResult usage =
      testing::run("train --data " + dir_ / "data" + " --override", dir_);
  EXPECT_EQ(usage.exit_code, 2) << usage.err;

  Cli overridden(with(run, {"--resume", "--epochs", "2", "--lr", "0.5", "--override"}), dir_);
  ASSERT_EQ(overridden.wait(), 0) << overridden.err();
  EXPECT_NE(overridden.out().find("note: --override: going on with --lr 0.001 (this run: 0.5)"),
            std::string::npos)
      << overridden.out();
  // The new checkpoint holds the new settings: resuming it with them needs nothing more.
  Cli again(with(run, {"--resume", "--epochs", "3", "--lr", "0.5"}), dir_);
  EXPECT_EQ(again.wait(), 0) << again.err();
}

// --augment's operations change what is trained, in order, and the log names them in full.
TEST_F(TrainCliTest, AugmentationsChangeTheTrainingImagesAndAreLogged) {
  write_data("data", 300);
  const auto train = [&](const std::string& log, const std::vector<std::string>& augment) {
    Cli run(with({"--data", dir_ / "data", "--epochs", "1", "--batch", "32", "--log", dir_ / log},
                 augment),
            dir_);
    EXPECT_EQ(run.wait(), 0) << run.err();
    return log_records(dir_ / log, "");
  };
  const auto plain = train("plain.jsonl", {});
  const auto augmented = train("augmented.jsonl", {"--augment", "color_jitter:contrast=0.5",
                                                   "--augment", "color_jitter:brightness=0.3"});
  EXPECT_FALSE(plain.front()["config"].contains("augment"));
  EXPECT_EQ(
      augmented.front()["config"]["augment"],
      (nlohmann::json{"color_jitter:brightness=0,contrast=0.5,saturation=0,hue=0,backend=tensor",
                      "color_jitter:brightness=0.3,contrast=0,saturation=0,hue=0,backend=tensor"}));
  EXPECT_NE(plain.back()["train_loss"], augmented.back()["train_loss"]);
}

// ColorJitter's saturation and hue change nothing on 1-channel images, as torchvision's: the
// run says so before training, also inside a RandomApply; brightness alone says nothing.
TEST_F(TrainCliTest, SaturationAndHueOnOneChannelAreNamedBeforeTraining) {
  write_data("data", 100);
  Cli hue(
      {"--data", dir_ / "data", "--max-steps", "1", "--no-eval", "--augment",
       "color_jitter:hue=0.1", "--augment", "random_apply:ops=[color_jitter:saturation=0.4],p=0.5"},
      dir_);
  ASSERT_EQ(hue.wait(), 0) << hue.err();
  const std::string out = hue.out();
  const std::string said = ": saturation and hue leave 1-channel images unchanged";
  EXPECT_NE(out.find("warning: --augment color_jitter:brightness=0,contrast=0,saturation=0,"
                     "hue=0.1,backend=tensor" +
                     said),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("warning: --augment random_apply:"), std::string::npos) << out;
  EXPECT_LT(out.find(said), out.find("training mlp on")) << out;
  Cli bright({"--data", dir_ / "data", "--max-steps", "1", "--no-eval", "--augment",
              "color_jitter:brightness=0.2"},
             dir_);
  ASSERT_EQ(bright.wait(), 0) << bright.err();
  EXPECT_EQ(bright.out().find("1-channel"), std::string::npos) << bright.out();
}

// Two runs on one checkpoint directory: the second fails at once; the first goes on.
TEST_F(TrainCliTest, ASecondRunOnTheCheckpointDirectoryFailsAtOnce) {
  write_data("data", 2000);
  const std::vector<std::string> args = {
      "--data",  dir_ / "data", "--epochs",         "1000",
      "--batch", "16",          "--checkpoint-dir", dir_ / "ckpt"};
  Cli first(args, dir_);
  ASSERT_TRUE(first.wait_for_output("epoch 1/1000  train loss")) << first.err();
  std::vector<std::string> second_args = args;
  second_args.push_back("--resume");
  const auto start = std::chrono::steady_clock::now();
  Cli second(second_args, dir_);
  expect_one_line_error(second,
                        "checkpoint directory '" + (dir_ / "ckpt") + "' is in use by another run");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  first.signal(SIGINT);
  EXPECT_EQ(first.wait(), 130) << first.err();
  EXPECT_TRUE(latest_checkpoint(dir_ / "ckpt").is_ok());
}

// A user's TorchScript model that cannot train on the data: one line naming the file, the step
// and the reason, never LibTorch's traceback (that only with --verbose).
TEST_F(TrainCliTest, FailingModelsGiveOneLineNamingModelStepAndReason) {
  write_data("data", 300);
  ASSERT_TRUE(testing::write_script_models(dir_.path())) << STOKER_PYTHON " with torch";
  auto train = [&](const std::string& model, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--data",  dir_ / "data", "--epochs", "1",
                                     "--batch", "32",          "--model",  dir_ / model};
    args.insert(args.end(), more.begin(), more.end());
    return Cli(args, dir_);
  };
  expect_one_line_error(train("conv3.pt"),
                        "model " + (dir_ / "conv3.pt") +
                            " expects input with 3 channels (its first layer 'conv1.weight' is "
                            "[8, 3, 3, 3]); the data's samples are [1, 4, 4]");
  expect_one_line_error(train("state_dict.pt"),
                        "save the model with torch.jit.script(model).save(path)");
  expect_one_line_error(train("no_params.pt"), "has no trainable parameters");
  expect_one_line_error(train("int_in_training.pt"),
                        "training stopped at epoch 1, batch 1, step 1: model " +
                            (dir_ / "int_in_training.pt") +
                            " returns Long logits; they must be floating point");
  expect_one_line_error(train("rows_in_training.pt"),
                        "step 1: model " + (dir_ / "rows_in_training.pt") +
                            " returns 1 rows of logits for a batch of 32 samples");
  // One call checks the output shape; the third training batch is the fourth call.
  expect_one_line_error(train("raises.pt"),
                        "training stopped at epoch 1, batch 3, step 3: model " +
                            (dir_ / "raises.pt") +
                            " failed: builtins.RuntimeError: boom after three calls");

  Cli verbose = train("conv3.pt", {"--verbose"});
  EXPECT_EQ(verbose.wait(), 1);
  EXPECT_NE(verbose.err().find("Traceback of TorchScript"), std::string::npos) << verbose.err();

  Cli tuple = train("tuple.pt", {"--save-model", dir_ / "trained.pt"});
  ASSERT_EQ(tuple.wait(), 0) << tuple.err();
  EXPECT_NE(tuple.out().find("test acc"), std::string::npos) << tuple.out();
}

// Known slow configurations are said before training, with the fix; the start line names the
// device, and a run stopped by --max-steps measures its part of an epoch like a whole one.
TEST_F(TrainCliTest, SlowConfigurationsAreSaidBeforeTraining) {
  write_data("data", 300);
  const int cores = machine_cores();
  Cli crowded({"--data", dir_ / "data", "--max-steps", "3", "--batch", "16", "--workers", "1",
               "--threads", std::to_string(cores), "--amp", "bf16"},
              dir_);
  ASSERT_EQ(crowded.wait(), 0) << crowded.err();
  const std::string out = crowded.out();
  const std::string threads = fmt::format(
      "warning: {} compute thread{} + 1 loader worker exceed "
      "this machine's {} core{}",
      cores, cores == 1 ? "" : "s", cores, cores == 1 ? "" : "s");
  EXPECT_NE(out.find(threads), std::string::npos) << out;
  EXPECT_LT(out.find(threads), out.find("training mlp on")) << "said before training";
  const std::string bf16 = bf16_not_native(machine_cpu_flags(), libtorch_cpu_capability());
  EXPECT_EQ(
      out.find("warning: --amp bf16 without native bfloat16 (" + bf16 + ")") != std::string::npos,
      !bf16.empty())
      << out;
  EXPECT_NE(out.find(", device cpu\n"), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 1/5  train loss "), std::string::npos) << out;
  EXPECT_NE(out.find(" samples/s "), std::string::npos) << out;
  EXPECT_NE(out.find("(stopped after 3 of 19 batches)"), std::string::npos) << out;

  Cli quiet({"--data", dir_ / "data", "--max-steps", "1", "--workers", "1"}, dir_);
  ASSERT_EQ(quiet.wait(), 0) << quiet.err();
  if (cores >= 2) {
    EXPECT_EQ(quiet.out().find("warning:"), std::string::npos) << quiet.out();
  }
  EXPECT_NE(quiet.out().find(fmt::format("{} threads, 1 workers", std::max(1, cores - 1))),
            std::string::npos)
      << quiet.out();

  expect_one_line_error(Cli({"--data", dir_ / "data", "--device", "cuda:1"}, dir_),
                        "device cuda:1: no CUDA device");
}

// Numbers no machine can serve are refused before anything is allocated or written, naming the
// limit (the usage errors, exit code 2, are cli_test's).
TEST_F(TrainCliTest, AbsurdNumbersNameTheLimitAndWriteNothing) {
  write_data("data", 300);
  const std::vector<std::string> outputs = {"--data",           dir_ / "data",      "--log",
                                            dir_ / "log.jsonl", "--checkpoint-dir", dir_ / "ckpt",
                                            "--save-model",     dir_ / "model.pt"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), outputs.begin(), outputs.end());
    return args;
  };
  for (const char* batch : {"1000000000", "9223372036854775807"}) {
    expect_one_line_error(Cli(with({"--batch", batch}), dir_),
                          std::string("batch size ") + batch + " needs at least ");
    Cli again(with({"--batch", batch}), dir_);
    again.wait();
    EXPECT_NE(again.err().find("more than this machine's memory"), std::string::npos);
    EXPECT_NE(again.err().find("samples fit"), std::string::npos);
  }
  // An mlp whose first layer, gradients and Adam's state outgrow the machine's memory: refused
  // by its size before it is built (once, the kernel's OOM killer ended the run at 23.5 GB).
  int64_t side = 1024;
  while (side * side * 128.0 * 16 <= static_cast<double>(machine_memory_bytes())) side *= 2;
  if (side <= 8192) {
    for (const char* split : {"big/train", "big/test"}) {
      Schema schema =
          Schema::create({{"image", DType::kUint8, {1, side, side}}, {"label", DType::kInt64, {}}})
              .value_or_throw();
      RecordEncoder encoder(schema);
      auto writer = DatasetWriter::create(dir_ / split, schema, {}).value_or_throw();
      const std::vector<uint8_t> image(side * side);
      for (int64_t label : {0, 1}) {
        throw_if_error(encoder.set_fixed(0, image.data(), image.size()));
        throw_if_error(encoder.set_fixed(1, &label, sizeof(label)));
        const std::vector<uint8_t> record = encoder.encode();
        throw_if_error(writer->append(record.data(), record.size()));
      }
      throw_if_error(writer->finish());
    }
    expect_one_line_error(
        Cli({"--data", dir_ / "big", "--batch", "1", "--no-eval", "--save-model",
             dir_ / "model.pt"},
            dir_),
        fmt::format("model mlp for samples of [1, {}, {}] and 2 classes has {} parameters: with "
                    "their gradients and adam's state that is ",
                    side, side, side * side * 128 + 128 + 128 * 64 + 64 + 64 * 2 + 2));
  }
  expect_one_line_error(Cli(with({"--epochs", "9223372036854775807"}), dir_),
                        "9223372036854775807 epochs of 5 optimizer steps are more steps than a "
                        "run can count");
  for (const char* output : {"log.jsonl", "ckpt", "model.pt"})
    EXPECT_FALSE(fs::exists(dir_ / output)) << output;
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

TEST_F(TrainCliTest, ASampleCostSlowsTheLoaderButTrainsTheSameModel) {
  write_data("data", 600);
  auto args = [&](const std::string& model, const std::string& cost) {
    return std::vector<std::string>{"--data",
                                    dir_ / "data",
                                    "--epochs",
                                    "1",
                                    "--batch",
                                    "32",
                                    "--save-model",
                                    dir_ / model,
                                    "--log",
                                    dir_ / (model + ".jsonl"),
                                    "--sample-cost-us",
                                    cost,
                                    "--no-eval"};
  };
  Cli plain(args("plain.pt", "0"), dir_);
  ASSERT_EQ(plain.wait(), 0) << plain.err();
  Cli costly(args("costly.pt", "200"), dir_);
  ASSERT_EQ(costly.wait(), 0) << costly.err();
  EXPECT_NE(costly.out().find("a synthetic cost of 200 us per sample"), std::string::npos)
      << costly.out();
  EXPECT_EQ(plain.out().find("synthetic cost"), std::string::npos) << plain.out();
  EXPECT_EQ(log_records(dir_ / "costly.pt.jsonl", "run").at(0)["config"]["sample_cost_us"], 200);
  // 600 samples of 200 us on one worker: at least 0.12 s of waiting for data.
  EXPECT_GE(log_records(dir_ / "costly.pt.jsonl", "epoch").at(0)["data_seconds"].get<double>(),
            0.1);
  const std::vector<at::Tensor> a = saved_parameters(dir_ / "plain.pt");
  const std::vector<at::Tensor> b = saved_parameters(dir_ / "costly.pt");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << "tensor " << i;
}

}  // namespace
}  // namespace stoker
