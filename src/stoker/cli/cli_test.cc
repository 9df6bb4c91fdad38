// The `stoker` binary end to end: the README's flow on Fashion-MNIST, and bad inputs giving
// one line on stderr naming the file, a non-zero exit, and nothing half-written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "stoker/pipeline/op_registry.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/store/manifest.h"
#include "stoker/testing/chrome_trace_check.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/records.h"
#include "stoker/testing/report_json.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/machine.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

using testing::expect_one_line_error;
using testing::run;
using testing::RunResult;

TEST(CliTest, ConvertFashionMnistThenInspectJson) {
  ASSERT_TRUE(fs::is_directory(kFashionMnistDebianDir))
      << "scripts/setup.sh installs dataset-fashion-mnist";
  testing::TempDir dir;
  RunResult convert = run("convert fashion-mnist --out " + dir / "fm", dir);
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  RunResult inspect = run("inspect --json " + dir / "fm", dir);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  auto j = nlohmann::json::parse(inspect.out);
  ASSERT_EQ(j["datasets"].size(), 2u);
  const auto& test = j["datasets"][0];
  const auto& train = j["datasets"][1];
  EXPECT_EQ(train["records"], 60000);
  EXPECT_EQ(test["records"], 10000);
  ASSERT_EQ(train["label_histogram"].size(), 10u);
  for (const auto& [label, count] : train["label_histogram"].items())
    EXPECT_EQ(count, 6000) << label;
  for (const auto& [label, count] : test["label_histogram"].items())
    EXPECT_EQ(count, 1000) << label;
  // Statistics computed at conversion, close to the well-known 0.2860 and 0.3530 (train split).
  const nlohmann::json& stats = train["statistics"]["image"];
  EXPECT_EQ(stats["pixels"], 60000 * 784);
  EXPECT_NEAR(stats["mean"][0].get<double>(), 0.2860, 5e-4) << stats.dump();
  EXPECT_NEAR(stats["std"][0].get<double>(), 0.3530, 5e-4) << stats.dump();
  EXPECT_NE(test["statistics"]["image"]["mean"][0], stats["mean"][0]) << "each split its own";
  RunResult text = run("inspect " + dir / "fm/train", dir);
  EXPECT_NE(text.out.find("pixels    image: mean 0.2860 std 0.3530 per channel, over 47040000 "
                          "pixels each\n"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(run("verify " + dir / "fm/train", dir).exit_code, 0);

  RunResult again = run("convert fashion-mnist --out " + dir / "fm", dir);
  expect_one_line_error(again, "exists");
}

// --data (and inspect's and verify's DIR) means one thing everywhere: a dataset, or a folder of
// them whose train/ is trained on and whose test/ (else val/) is evaluated; each command says
// which it used.
TEST(CliTest, DataIsADatasetOrAFolderOfTrainAndTestEverywhere) {
  ASSERT_TRUE(fs::is_directory(kFashionMnistDebianDir));
  testing::TempDir dir;
  ASSERT_EQ(run("convert fashion-mnist --out " + dir / "fm", dir).exit_code, 0);
  RunResult folder = run("verify " + dir / "fm", dir);
  ASSERT_EQ(folder.exit_code, 0) << folder.err;
  EXPECT_EQ(folder.out, dir / "fm/test" + ": all 10000 records in 1 shard verified\n" +
                            dir / "fm/train" + ": all 60000 records in 1 shard verified\n");
  RunResult one = run("verify " + dir / "fm/test", dir);
  EXPECT_EQ(one.out, dir / "fm/test" + ": all 10000 records in 1 shard verified\n");

  RunResult loader =
      run("bench loader --json --epochs 1 --min-seconds 0 --data " + dir / "fm", dir);
  ASSERT_EQ(loader.exit_code, 0) << loader.err;
  EXPECT_EQ(nlohmann::json::parse(loader.out)["data"], dir / "fm/train");
  // --field: a field made by the operations given (any dataset's, a video's decode_clip too):
  // Fashion-MNIST's own normalisation gives the default run's batches, another mean others.
  const auto field_checksum = [&](const std::string& mean) {
    RunResult field = run("bench loader --json --epochs 1 --min-seconds 0 --data " + dir / "fm" +
                              " --field image=normalize:mean=[" + mean + "],std=[0.353]",
                          dir);
    EXPECT_EQ(field.exit_code, 0) << field.err;
    return field.exit_code == 0 ? nlohmann::json::parse(field.out)["checksum"].get<double>() : 0;
  };
  const double checksum = nlohmann::json::parse(loader.out)["checksum"].get<double>();
  EXPECT_EQ(field_checksum("0.286"), checksum);
  EXPECT_NE(field_checksum("0.3"), checksum);
  expect_one_line_error(run("bench loader --data " + dir / "fm" + " --field image", dir),
                        "--field: 'image' is not FIELD=NAME[:key=value,...];NAME...");
  expect_one_line_error(run("bench loader --data " + dir / "fm" + " --field image=no_such_op", dir),
                        "--field: ");
  RunResult loader_text =
      run("bench loader --epochs 1 --min-seconds 0 --data " + dir / "fm/test", dir);
  EXPECT_EQ(loader_text.out.rfind("dataset    " + dir / "fm/test\n", 0), 0u) << loader_text.out;

  RunResult trained = run("train --max-steps 3 --data " + dir / "fm", dir);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  EXPECT_NE(trained.out.find("training mlp on " + dir / "fm/train"), std::string::npos);
  EXPECT_NE(trained.out.find("evaluating on " + dir / "fm/test" + " (10000 samples)"),
            std::string::npos)
      << trained.out;
  RunResult single = run("train --max-steps 3 --data " + dir / "fm/test", dir);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_NE(single.out.find("training mlp on " + dir / "fm/test"), std::string::npos);
  EXPECT_NE(single.out.find("not evaluating: " + dir / "fm/test" + " is one dataset"),
            std::string::npos)
      << single.out;
  fs::rename(dir / "fm/test", dir / "fm/val");
  RunResult val = run("train --max-steps 3 --data " + dir / "fm", dir);
  EXPECT_NE(val.out.find("evaluating on " + dir / "fm/val"), std::string::npos) << val.out;

  fs::rename(dir / "fm/train", dir / "fm/other");
  expect_one_line_error(
      run("train --data " + dir / "fm", dir),
      dir / "fm" + " holds no train/ dataset (it holds other/, val/ of " + dir / "fm" + ")");
  expect_one_line_error(run("bench loader --data " + dir / "fm", dir), "holds no train/ dataset");
  fs::create_directory(dir / "empty");
  expect_one_line_error(run("verify " + dir / "empty", dir),
                        dir / "empty" + ": neither a dataset (no manifest.json) nor a folder");
}

// The benchmark commands run end to end and report what they measured (not how fast: that is
// docs/BENCHMARKS.md's business).
TEST(CliTest, BenchLoaderAndBenchTrainReportTheirRuns) {
  ASSERT_TRUE(fs::is_directory(kFashionMnistDebianDir));
  testing::TempDir dir;
  ASSERT_EQ(run("convert fashion-mnist --out " + dir / "fm", dir).exit_code, 0);
  RunResult loader = run(
      "bench loader --json --epochs 2 --min-seconds 0 --workers 2 --data " + dir / "fm/test", dir);
  ASSERT_EQ(loader.exit_code, 0) << loader.err;
  auto l = nlohmann::json::parse(loader.out);
  EXPECT_EQ(l["samples"], 2 * 10000);
  EXPECT_GE(l["prefetch"].get<int>(), 4);  // auto
  EXPECT_GT(l["samples_per_s"].get<double>(), 0);
  EXPECT_GT(l["bare_loop_samples_per_s"].get<double>(), 0);
  EXPECT_EQ(l["epoch_start_wait_ms"].size(), 1u);  // epochs after the first
  const double busy = l["workers_busy_fraction"].get<double>();
  EXPECT_GT(busy, 0.0);
  EXPECT_LE(busy, 1.01);  // clock granularity

  // A synthetic heavy field: every sample costs 100 us on some worker.
  RunResult heavy =
      run("bench loader --json --epochs 1 --min-seconds 0 --workers 2 --batch 64 --prefetch 2 "
          "--sample-cost-us 100 --trace " +
              dir / "trace.json" + " --report " + dir / "report" + " --data " + dir / "fm/test",
          dir);
  ASSERT_EQ(heavy.exit_code, 0) << heavy.err;
  auto h = nlohmann::json::parse(heavy.out);
  EXPECT_EQ(h["sample_cost_us"], 100);
  EXPECT_GE(h["transform_s"].get<double>(), 10000 * 100e-6);
  EXPECT_LT(h["samples_per_s"].get<double>(), 2 / 100e-6);  // two workers at most
  // Its trace: every batch in two pieces on the workers, whose transforms took the samples' time.
  const auto trace = nlohmann::json::parse(read_file(dir / "trace.json").value_or_throw());
  EXPECT_EQ(testing::nesting_error(trace), "");
  const auto thread_names = testing::thread_names(trace);
  int pieces = 0;
  double transform_us = 0;
  for (const auto& [tid, spans] : testing::spans_by_thread(trace)) {
    for (const auto& span : spans) {
      EXPECT_EQ(span.at("cat"), "pipeline");
      const bool on_worker = thread_names.at(tid) == "stoker-worker";
      EXPECT_EQ(on_worker, span.at("name") != "wait") << span.dump();
      if (span.at("name") == "piece") ++pieces;
      if (span.at("name") == "transform") transform_us += span.at("dur").get<double>();
    }
  }
  EXPECT_GE(pieces, 2 * (10000 / 64));
  EXPECT_GE(transform_us, 10000 * 100.0);
  // Its report: the run's facts, the stage times per batch, samples/s over the run.
  const auto report = testing::read_report(dir / "report");
  EXPECT_EQ(report.at("title"), "stoker bench loader");
  const std::map<std::string, std::string> facts = testing::report_facts(report);
  EXPECT_EQ(facts.at("workers"), "2");
  EXPECT_EQ(facts.at("batch"), "64");
  EXPECT_EQ(facts.at("sample cost (us)"), "100");
  EXPECT_EQ(facts.at("samples/s"), fmt::format("{:.0f}", h["samples_per_s"].get<double>()));
  const auto& split = report.at("split");
  ASSERT_EQ(split.size(), 4u);
  EXPECT_EQ(split[1].at("name"), "transform (worker time)");
  // 64 samples of 100 us each (the last batch holds 16 of them).
  EXPECT_GE(split[1].at("seconds").get<double>(), 10000 * 100e-6 / (10000 / 64 + 1));
  EXPECT_LT(split[1].at("seconds").get<double>(), 0.1);
  EXPECT_EQ(split[3].at("name"), "consumer wait");
  // Each point is samples/s over the interval since the one before (from time zero): the
  // samples they add up to are at most the run's, and each interval delivered some. (How the
  // rates spread depends on the machine's load, so nothing is asserted of that.)
  const auto& points = report.at("charts")[0]["series"][0]["points"];
  ASSERT_GE(points.size(), 3u);  // 10000 samples at 2 / 100 us take 0.5 s at least
  double since = 0, samples = 0;
  for (const auto& point : points) {
    const double at = point[0].get<double>(), rate = point[1].get<double>();
    EXPECT_GT(at, since);
    EXPECT_GT(rate, 0);
    samples += rate * (at - since);
    since = at;
  }
  EXPECT_LE(samples, 10000 * (1 + 1e-6));
  EXPECT_GE(samples, 64 * (1 - 1e-6));

  RunResult train =
      run("bench train --json --no-torch --repeat 2", dir, "STOKER_DATA=" + dir / "root");
  ASSERT_EQ(train.exit_code, 0) << train.err;
  auto t = nlohmann::json::parse(train.out);
  EXPECT_EQ(t["steps"], 938);
  EXPECT_EQ(t["stoker_over_bound_each"].size(), 2u);
  const auto each = t["stoker_over_bound_each"].get<std::vector<double>>();
  EXPECT_EQ(t["stoker_over_bound_interval"][0].get<double>(), std::min(each[0], each[1]));
  EXPECT_EQ(t["stoker_over_bound_interval"][1].get<double>(), std::max(each[0], each[1]));
  EXPECT_DOUBLE_EQ(t["stoker_over_bound_interval_coverage"].get<double>(), 0.5);  // 2 pairs
  std::vector<std::string> names;
  for (const auto& row : t["results"]) {
    names.push_back(row["name"]);
    EXPECT_GT(row["seconds"].get<double>(), 0) << row.dump();
    // The quiet-machine time sums each slice's fastest run: never above the fastest whole run,
    // whose median is at least that.
    EXPECT_GT(row["quiet_seconds"].get<double>(), 0) << row.dump();
    EXPECT_LE(row["quiet_seconds"].get<double>(), row["seconds"].get<double>() * 1.001)
        << row.dump();
  }
  EXPECT_NEAR(t["stoker_over_bound_quiet"].get<double>(),
              t["results"][0]["quiet_seconds"].get<double>() /
                  t["results"][1]["quiet_seconds"].get<double>(),
              1e-9);
  EXPECT_EQ(names, (std::vector<std::string>{"stoker", "stoker compute-only bound",
                                             "compute only, 16 batches cycled"}));
  EXPECT_NE(t["pytorch_error"].get<std::string>().find("--no-torch"), std::string::npos);
}

// --workers auto: the loader tunes itself within the first batches, and says what it chose.
TEST(CliTest, BenchLoaderWorkersAutoSettlesAndReports) {
  testing::TempDir dir;
  ASSERT_EQ(run("convert fashion-mnist --out " + dir / "fm", dir).exit_code, 0);
  // 157 batches of 64 samples of 200 us: data-bound, 13 ms a batch per worker.
  const std::string args =
      "bench loader --epochs 1 --min-seconds 0 --workers auto --batch 64 "
      "--sample-cost-us 200 --data " +
      dir / "fm/test";
  RunResult json = run(args + " --json", dir);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  const nlohmann::json& tuning = j.at("tuning");
  EXPECT_EQ(tuning["settled"], true) << tuning.dump();
  EXPECT_LE(tuning["settle_batches"].get<int>(), 10000 / 64 + 1);
  EXPECT_EQ(tuning["max_workers"], machine_cores());
  EXPECT_GE(tuning["workers"].get<int>(), 1);
  EXPECT_LE(tuning["workers"].get<int>(), machine_cores());
  EXPECT_EQ(j["workers"], tuning["workers"]);
  EXPECT_EQ(j["prefetch"], tuning["prefetch"]);
  ASSERT_GE(tuning["trials"].size(), 1u);
  EXPECT_EQ(tuning["trials"][0]["workers"], std::max(1, machine_cores() - 1));  // the start
  for (const auto& trial : tuning["trials"]) {
    EXPECT_GT(trial["batches_per_s"].get<double>(), 0) << trial.dump();
    // At most the workers' busy-wait bound; 5% over it for the edges of a trial's window (a
    // loaded machine measured 79.5 against 78.1 batches/s with 1 worker).
    EXPECT_LT(trial["batches_per_s"].get<double>(),
              1.05 / (64 * 200e-6) * trial["workers"].get<int>())
        << trial.dump();
  }
  const std::string reason = tuning["reason"];
  EXPECT_NE(reason.find(" batches/s"), std::string::npos) << reason;
  // The text output says it in one line.
  RunResult text = run(args, dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(" workers (auto), "), std::string::npos) << text.out;
  const size_t line = text.out.find("\ntuning     ");
  ASSERT_NE(line, std::string::npos) << text.out;
  EXPECT_NE(text.out.find("; settled after ", line), std::string::npos) << text.out;
}

// A benchmark too short to mean anything says so and is timed again with more epochs.
TEST(CliTest, BenchLoaderTimesATooShortRunAgainLonger) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "tiny", 100);
  RunResult r = run("bench loader --json --epochs 2 --min-seconds 0.2 --data " + dir / "tiny", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["epochs"].get<int>(), 2);
  EXPECT_EQ(j["samples"], 100 * j["epochs"].get<int>());
  EXPECT_GE(j["seconds"].get<double>(), 0.2);
  EXPECT_EQ(j["note"].get<std::string>().rfind("note: 2 epochs took ", 0), 0u) << j["note"];
  EXPECT_NE(
      j["note"].get<std::string>().find("too short to measure (--min-seconds 0.2); timed " +
                                        std::to_string(j["epochs"].get<int>()) + " epochs instead"),
      std::string::npos)
      << j["note"];
  RunResult text = run("bench loader --epochs 2 --min-seconds 0.2 --data " + dir / "tiny", dir);
  EXPECT_EQ(text.out.rfind("note: 2 epochs took ", 0), 0u) << text.out;
}

// The PyTorch baseline runs without a shell (a path with spaces works, a command in --python
// runs nothing), and a baseline that fails fails the command, before the timed runs.
TEST(CliTest, BenchLoaderChecksTheReportDirectoryFirst) {
  testing::TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir / "file", "x").is_ok());
  const RunResult r = run("bench loader --report " + dir / "file" + " --data " + dir / "none", dir);
  // Before the data is even opened.
  expect_one_line_error(r, "--report: " + dir / "file" + ": not a directory");
  EXPECT_EQ(r.out, "");
}

TEST(CliTest, BenchTrainRunsTheBaselineWithoutAShell) {
  ASSERT_TRUE(fs::is_directory(kFashionMnistDebianDir));
  testing::TempDir dir;
  const std::string env = "STOKER_DATA=" + dir / "root";
  RunResult injected =
      run("bench train --repeat 1 --python '/bin/touch " + dir / "x" + "; " STOKER_PYTHON "'", dir,
          env);
  expect_one_line_error(injected, "cannot run /bin/touch " + dir / "x" + "; " STOKER_PYTHON);
  EXPECT_EQ(injected.exit_code, 1);
  EXPECT_FALSE(fs::exists(dir / "x"));

  fs::create_directory(dir / "with space");
  const std::string script = dir / "with space/base line.py";
  std::ofstream(script) << "import sys, json\n"
                           "if '--json' not in sys.argv: sys.exit('no --json')\n"
                           "print(json.dumps({'results': [{'name': 'fake', 'seconds': 1.5}]}))\n";
  RunResult spaced =
      run("bench train --json --repeat 1 --torch-baseline '" + script + "'", dir, env);
  ASSERT_EQ(spaced.exit_code, 0) << spaced.err;
  EXPECT_EQ(nlohmann::json::parse(spaced.out)["results"][0]["name"], "pytorch fake");

  std::ofstream(script) << "import sys\nsys.exit('torchvision is missing')\n";
  RunResult failed = run("bench train --repeat 1 --torch-baseline '" + script + "'", dir, env);
  expect_one_line_error(failed, "the PyTorch baseline failed: " STOKER_PYTHON " " + script +
                                    " exited with status 1: torchvision is missing");
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.out, "") << "no timed runs after a failed baseline";
}

TEST(CliTest, VerifyListsEveryBadRecordAndExitsOne) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "ds", 100);
  for (uint64_t record : {5, 96}) {
    auto [shard, offset] = testing::record_location(dir / "ds", record);
    testing::flip_byte(shard, offset + 1);
  }
  RunResult r = run("verify " + dir / "ds", dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 3) << r.err;
  EXPECT_NE(r.err.find("record 5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("record 96:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 of 100 records failed"), std::string::npos) << r.err;
}

TEST(CliTest, BadInputsGiveOneLineNamingTheFile) {
  testing::TempDir dir;
  expect_one_line_error(run("convert idx --images " + dir / "none.gz" + " --labels " +
                                dir / "l.gz" + " --out " + dir / "o",
                            dir),
                        dir / "none.gz");
  EXPECT_FALSE(fs::exists(dir / "o"));
  expect_one_line_error(run("inspect " + dir / "nothing", dir), dir / "nothing");
  expect_one_line_error(run("verify " + dir / "nothing", dir), dir / "nothing");

  testing::write_labelled_dataset(dir / "ds", 100, 10, 1024);
  fs::remove(dir / "ds/shard-00002.stk");
  expect_one_line_error(run("inspect " + dir / "ds", dir), "shard-00002.stk");

  testing::write_labelled_dataset(dir / "ds2", 100);
  const std::string shard = dir / "ds2/shard-00000.stk";
  fs::resize_file(shard, fs::file_size(shard) - 10);
  expect_one_line_error(run("verify " + dir / "ds2", dir), "truncated");

  testing::write_labelled_dataset(dir / "ds3", 100);
  testing::flip_byte(dir / "ds3/shard-00000.stk", fs::file_size(dir / "ds3/shard-00000.stk") - 60);
  expect_one_line_error(run("verify " + dir / "ds3", dir), "index checksum");
}

// A command line that means nothing: one line of our own on stderr, exit code 2, and nothing
// done (no output file, no checkpoint directory, no conversion into the data root).
TEST(CliTest, UsageErrorsExitTwoWithOneLineAndDoNothing) {
  testing::TempDir dir;
  const std::string outputs = " --log " + dir / "log.jsonl" + " --checkpoint-dir " + dir / "ckpt" +
                              " --save-model " + dir / "model.pt";
  const std::string env = "STOKER_DATA=" + dir / "root";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train --epochs 0" + outputs, "--epochs must be at least 1"},
      {"train --epoch 3" + outputs, "unknown option --epoch (did you mean --epochs?)"},
      {"trian --epochs 3", "unknown command 'trian' (did you mean 'train'?)"},
      {"",
       "missing command: choose bench, convert, doctor, env, inspect, ops, push, train or verify"},
      {"bench lodaer", "unknown command 'bench lodaer' (did you mean 'bench loader'?)"},
      {"train --lr abc" + outputs, "--lr: 'abc' is not a number"},
      {"train --lr -1" + outputs, "--lr must be greater than 0"},
      {"train --batch 1.5" + outputs, "--batch: '1.5' is not a whole number"},
      {"train --epochs 99999999999999999999" + outputs,
       "--epochs must be at most 9223372036854775807"},
      {"train --workers 100000" + outputs, "--workers must be at most 1024 (the loader's limit)"},
      {"train --threads 100000" + outputs, "--threads must be at most "},
      {"bench loader --workers 100000", "--workers must be at most 1024 (the loader's limit)"},
      {"bench loader --prefetch 0", "--prefetch must be -1 (auto) or at least 1"},
      {"bench loader --workers many", "--workers: 'many' is not a whole number or auto"},
      {"train --workers -1" + outputs, "--workers must be at least 0"},
      {"train --workers Auto" + outputs, "--workers: 'Auto' is not a whole number or auto"},
      {"train --amp fp8" + outputs, "--amp: unknown value 'fp8' (choose off, bf16 or fp16)"},
      {"train --optimizer adma" + outputs,
       "--optimizer: unknown value 'adma' (did you mean 'adam'?"},
      {"train --model transformer" + outputs, "--model: unknown model 'transformer'"},
      {"train --flip 1.5" + outputs, "--flip must be at most 1"},
      {"train --image-size 0" + outputs, "--image-size must be at least 1"},
      // The registry's message, as Python's stoker.transforms.ColorJitter(brightness=-1) says it.
      {"train --augment color_jitter:brightness=-1" + outputs,
       "stoker: --augment: color_jitter: brightness must be a number at least 0, not -1\n"},
      {"train --augment color_jitter:hue=0.6" + outputs,
       "stoker: --augment: color_jitter: hue must be a number in [0, 0.5], not 0.6\n"},
      {"doctor --augment colour_jitter",
       "--augment: unknown operation 'colour_jitter' (operations: "},
      {"bench loader --decode-only --augment color_jitter",
       "--augment works on the crop, which --decode-only leaves out"},
      {"train --augment random_resized_crop:size=32" + outputs,
       "--augment: random_resized_crop is not an augmentation (a pixel operation: "},
      {"convert imagefolder " + dir / "src" + " --out " + dir / "out" + " --max-side 100000",
       "--max-side must be at most 65500 (the largest JPEG)"},
      {"train --device gpu" + outputs,
       "--device: unknown device 'gpu' (choose cpu, cuda or cuda:N)"},
      {"train --resume", "--resume requires --checkpoint-dir"},
      {"train --dist-backend mpi" + outputs,
       "--dist-backend: unknown value 'mpi' (choose gloo or nccl)"},
      {"train --interpolation bicubc" + outputs,
       "--interpolation: unknown value 'bicubc' (did you mean 'bicubic'?"},
      {"train --auto-augment tawide" + outputs,
       "--auto-augment: unknown value 'tawide' (did you mean 'ta_wide'?"},
      {"train --label-smoothing 1.5" + outputs, "--label-smoothing"},
      // Debian's LibTorch has neither CUDA nor NCCL (a CUDA build refuses nccl on the CPU).
      {"train --device cpu --dist-backend nccl" + outputs,
       STOKER_TEST_NCCL ? "--dist-backend nccl carries CUDA tensors: train with --device cuda, "
                          "or use gloo"
                        : "--dist-backend nccl: this stoker was built against a LibTorch without "
                          "CUDA and NCCL (see stoker env); use gloo"},
      {"verify", "DIR is required (see stoker verify --help)"},
      {"inspect a b", "unexpected argument 'b' (see stoker inspect --help)"},
      {"convert idx --images a --labels b --out " + dir / "out" + " --shard-mb 0",
       "--shard-mb must be at least 1"},
  };
  for (const auto& [args, message] : cases) {
    RunResult r = run(args, dir, env);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("stoker: ", 0), 0u) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    std::vector<std::string> written;
    for (const auto& entry : fs::directory_iterator(dir.path()))
      if (entry.path().filename() != "stderr.txt") written.push_back(entry.path());
    EXPECT_EQ(written, std::vector<std::string>{}) << args;
  }
}

TEST(CliTest, VersionNamesStokerLibTorchAndTheFormats) {
  testing::TempDir dir;
  RunResult r = run("--version", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("stoker " STOKER_VERSION " (", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("LibTorch 2."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dataset format " + std::to_string(kDatasetFormatVersion)),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("checkpoint format "), std::string::npos) << r.out;
}

TEST(CliTest, EnvSaysWhatARunFinds) {
  testing::TempDir dir;
  const std::string root = dir / "root";
  RunResult r = run("env --json", dir, "STOKER_DATA=" + root);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  RunResult version = run("--version", dir);
  EXPECT_NE(version.out.find("LibTorch " + j.at("libtorch").get<std::string>()), std::string::npos)
      << version.out << j.dump();
  EXPECT_FALSE(j.at("blas").get<std::string>().empty());
  EXPECT_GE(j.at("threads").at("intra_op").get<int>(), 1);
  EXPECT_GE(j.at("threads").at("inter_op").get<int>(), 1);
  EXPECT_EQ(j.at("cores"), machine_cores());
  EXPECT_EQ(j.at("memory_bytes"), machine_memory_bytes());
  EXPECT_EQ(j.at("data_root"), root);
  EXPECT_EQ(j.at("nccl").get<bool>(), static_cast<bool>(STOKER_TEST_NCCL));
  EXPECT_EQ(j.at("video").get<bool>(), static_cast<bool>(STOKER_TEST_VIDEO));
  // The configure line's words: which CUDA and NCCL this build compiled, or why none.
  EXPECT_EQ(j.at("build"), STOKER_BUILD_SUMMARY);
  EXPECT_EQ(std::regex_search(STOKER_BUILD_SUMMARY, std::regex("NCCL [0-9]+\\.[0-9]+")),
            static_cast<bool>(STOKER_TEST_NCCL));
  if (!j.at("cuda").at("available").get<bool>()) {
    EXPECT_EQ(j.at("cuda").at("devices"), 0);
  }

  RunResult text = run("env", dir, "STOKER_DATA=" + root);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("libtorch  " + j.at("libtorch").get<std::string>(), 0), 0u) << text.out;
  EXPECT_NE(text.out.find("\nbuild     " STOKER_BUILD_SUMMARY "\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\ndata      " + root + " "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(STOKER_TEST_VIDEO ? "\nvideo     FFmpeg's" : "\nvideo     not in this"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(fmt::format("\nmachine   {} cores", machine_cores())), std::string::npos)
      << text.out;
}

// `stoker ops` lists the registry's description; --json is it, as Python reads it.
TEST(CliTest, OpsListsEveryOperationWithItsParameters) {
  testing::TempDir dir;
  const RunResult json = run("ops --json", dir);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out), nlohmann::json::parse(operations_json()));
  const RunResult text = run("ops", dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const OpSpec& op : operations()) {
    EXPECT_NE(text.out.find(op.name + " ("), std::string::npos) << text.out;
    for (const ParamSpec& p : op.params)
      EXPECT_NE(text.out.find(p.name + "=" + to_text(p.default_value)), std::string::npos)
          << op.name << "." << p.name;
  }
  EXPECT_NE(text.out.find("color_jitter (pixel: --augment, Python stoker.transforms.ColorJitter)\n"
                          "  Random brightness, contrast, saturation and hue"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  brightness=0           a number at least 0: "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  hue=0                  a number in [0, 0.5]: "), std::string::npos)
      << text.out;
}

TEST(CliTest, HelpOnEveryCommand) {
  testing::TempDir dir;
  for (const char* cmd : {"", "convert", "convert idx", "convert fashion-mnist", "convert cifar10",
                          "convert imagefolder", "convert coco", "convert voc", "convert masks",
                          "env", "inspect", "ops", "verify"}) {
    RunResult r = run(std::string(cmd) + " --help", dir);
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd;
  }
}

}  // namespace
}  // namespace stoker
