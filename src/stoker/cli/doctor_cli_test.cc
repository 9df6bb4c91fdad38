// `stoker doctor` end to end: a run made data-bound on purpose (a synthetic per-sample cost
// and one worker) and a compute-bound one (a CNN on 28x28 images) get those verdicts with the
// numbers and actions behind them, as text and as JSON, with a trace of every measured run;
// bad options and a distributed launch give one line and a non-zero exit. Each situation is
// chosen with a wide margin, so that the verdicts hold on a machine loaded by other work.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "stoker/store/dataset_writer.h"
#include "stoker/store/record_encoder.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/machine.h"

namespace stoker {
namespace {

using testing::expect_one_line_error;
using testing::run;
using testing::RunResult;

// Short measured runs: the verdicts below do not need more.
constexpr const char* kQuick = "--steps 5";
// 16 samples of 400 us: 6.4 ms of loading per batch against well under a millisecond of
// compute.
constexpr const char* kDataBound = "--batch 16 --workers 1 --sample-cost-us 400";

class DoctorCliTest : public ::testing::Test {
 protected:
  // 2,048 noisy 28x28 images of 10 classes at DIR/data (a single dataset: trained, not
  // evaluated, which the doctor never does anyway).
  void SetUp() override {
    const Schema schema =
        Schema::create({{"image", DType::kUint8, {1, 28, 28}}, {"label", DType::kInt64, {}}})
            .value_or_throw();
    auto writer = DatasetWriter::create(data_, schema, {}).value_or_throw();
    RecordEncoder encoder(schema);
    std::mt19937_64 rng(7);
    uint8_t image[28 * 28];
    for (int i = 0; i < 2048; ++i) {
      for (uint8_t& pixel : image) pixel = static_cast<uint8_t>(rng());
      const int64_t label = i % 10;
      throw_if_error(encoder.set_fixed(0, image, sizeof(image)));
      throw_if_error(encoder.set_fixed(1, &label, sizeof(label)));
      const std::vector<uint8_t> record = encoder.encode();
      throw_if_error(writer->append(record.data(), record.size()));
    }
    throw_if_error(writer->finish());
  }

  // `stoker doctor` on the data, quickly, with `args`; expects it to succeed.
  // Each measured phase runs for `seconds` at most.
  RunResult doctor(const std::string& args, double seconds = 0.3) {
    RunResult r =
        run(fmt::format("doctor --data {} {} --seconds {} {}", data_, kQuick, seconds, args), dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }

  nlohmann::json doctor_json(const std::string& args, double seconds = 0.3) {
    const RunResult r = doctor("--json " + args, seconds);
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  testing::TempDir dir_;
  const std::string data_ = dir_ / "data";
};

TEST_F(DoctorCliTest, ExpensiveSamplesOnOneWorkerAreDataBound) {
  // Its actions compare the loader alone with the training loop, phases measured one after the
  // other: a second each, so that a machine whose load comes and goes (builds beside) averages
  // out between them (at 0.3 s, with load 10 on 2 cores, 2 of 4 runs lost an action).
  const nlohmann::json j = doctor_json(kDataBound, 1.0);
  EXPECT_EQ(j["verdict"], "data-bound") << j.dump(2);
  EXPECT_GT(j["wait_fraction"].get<double>(), 0.5);
  EXPECT_LT(j["loader_rate"].get<double>(), j["compute_rate"].get<double>());
  // The workers' time per batch holds the synthetic cost of its 16 samples (pieces that
  // straddle the window's ends are not counted: a little less). No upper bound: it is wall time,
  // which a machine busy with other work stretches (3-4x, measured with a hog on both cores).
  EXPECT_GT(j["worker_seconds_per_batch"].get<double>(), 0.8 * 16 * 400e-6);
  ASSERT_FALSE(j["actions"].empty());
  if (machine_cores() >= 2) {
    EXPECT_EQ(j["actions"][0]["action"], "--workers 2");
    EXPECT_GT(j["actions"][0]["speedup"].get<double>(), 1.0);
  }
  EXPECT_EQ(j["actions"].back()["action"], "leave out --sample-cost-us");
  // The split covers the loop: its fractions add up to one.
  double total = 0;
  for (const auto& [part, f] : j["split_fraction"].items()) total += f.get<double>();
  EXPECT_NEAR(total, 1.0, 0.02);
  EXPECT_GT(j["split"]["data"].get<double>(), j["split"]["forward"].get<double>());
  EXPECT_EQ(j["facts"]["synthetic sample cost"], "400 us");
  EXPECT_EQ(j["phases"].size(), 3u);  // no compute probes for a data-bound run
}

// The CNN's step (milliseconds) against a loader that copies 16 small images (microseconds): a
// margin of two orders of magnitude, which a machine busy with other work does not close (with
// an MLP's step, a tenth of the CNN's, it did: `balanced`); small batches keep the steps short
// enough for every phase to hold its batches within the time cap on a loaded machine.
TEST_F(DoctorCliTest, ACnnFedByAFastLoaderIsComputeBound) {
  const nlohmann::json j = doctor_json("--model cnn --batch 16 --workers 1");
  EXPECT_EQ(j["verdict"], "compute-bound") << j.dump(2);
  EXPECT_GE(j["headroom"].get<double>(), 1.5);
  EXPECT_LT(j["wait_fraction"].get<double>(), 0.1);
  // The compute variants were measured (twice the batch at least) and named.
  ASSERT_GE(j["probes"].size(), 1u);
  EXPECT_EQ(j["probes"][0]["change"], "--batch 32");
  EXPECT_GT(j["probes"][0]["speedup"].get<double>(), 0.0);
  EXPECT_EQ(j["phases"].size(), 3 + j["probes"].size());
  for (const auto& phase : j["phases"]) EXPECT_GE(phase["batches"].get<int64_t>(), 5);
}

TEST_F(DoctorCliTest, NoBatchProbeWhenTwiceTheBatchWouldHoldNoMoreSamples) {
  // 2,048 records: a batch of 1,500 doubled would still hold 2,048 at most.
  const nlohmann::json j = doctor_json("--batch 1500 --workers 1");
  for (const auto& probe : j["probes"]) EXPECT_NE(probe["change"], "--batch 3000");
  for (const auto& action : j["actions"]) EXPECT_NE(action["action"], "--batch 3000");
}

TEST_F(DoctorCliTest, TextNamesTheVerdictTheSplitAndWritesATraceOfTheLoop) {
  const std::string trace = dir_ / "doctor.json";
  const RunResult r = doctor(fmt::format("{} --trace {}", kDataBound, trace));
  for (const char* words : {"loader alone", "compute alone", "training loop", "data wait",
                            "verdict: data-bound", "actions, best expected gain first"})
    EXPECT_NE(r.out.find(words), std::string::npos) << words << "\n" << r.out;
  const nlohmann::json t = nlohmann::json::parse(read_file(trace).value_or_throw());
  // The training loop's: its loader's worker, and the training thread's spans of every batch.
  int workers = 0, forwards = 0, h2d = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["args"]["name"] == "stoker-worker") ++workers;
    if (e["ph"] == "X" && e["name"] == "forward") ++forwards;
    if (e["ph"] == "X" && e["name"] == "h2d") ++h2d;
  }
  EXPECT_EQ(workers, 1);
  EXPECT_GT(forwards, 10);
  EXPECT_EQ(h2d, forwards);
  EXPECT_EQ(t["otherData"]["dropped_events"], 0);
}

TEST_F(DoctorCliTest, WorkersAutoIsMeasuredAfterTheTunerSettles) {
  const nlohmann::json j = doctor_json("--batch 16 --workers auto --sample-cost-us 400");
  EXPECT_EQ(j["verdict"], "data-bound") << j.dump(2);
  const std::string workers = j["facts"]["workers"];
  EXPECT_EQ(workers.rfind("auto: ", 0), 0u) << workers;
  EXPECT_NE(workers.find("settled after"), std::string::npos) << workers;
}

TEST_F(DoctorCliTest, TheReportHasTheVerdictSplitActionsAndThroughput) {
  const std::string report = dir_ / "report";
  const RunResult r = doctor(fmt::format("{} --report {}", kDataBound, report));
  const nlohmann::json j =
      nlohmann::json::parse(read_file(report + "/report.json").value_or_throw());
  EXPECT_EQ(j["title"], "stoker doctor");
  EXPECT_EQ(j["verdict"], "data-bound");
  EXPECT_NE(j["verdict_reason"].get<std::string>().find("waited for data"), std::string::npos);
  ASSERT_FALSE(j["split"].empty());
  EXPECT_EQ(j["split"][0]["name"], "data wait");
  // The report's actions are the ones this run printed, in its order. Which actions clear the
  // bar is measured (ExpensiveSamplesOnOneWorkerAreDataBound and diagnosis_test check them): a
  // machine busy with other work can leave none, and then neither lists any.
  std::vector<std::string> printed;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t dot = line.find(". ");
    const size_t gain = line.find("  (expected: ");
    if (line.rfind("  ", 0) == 0 && dot != std::string::npos && gain != std::string::npos &&
        std::all_of(line.begin() + 2, line.begin() + dot, ::isdigit))
      printed.push_back(line.substr(dot + 2, gain - dot - 2));
  }
  ASSERT_EQ(j["actions"].size(), printed.size()) << r.out;
  for (size_t i = 0; i < printed.size(); ++i) EXPECT_EQ(j["actions"][i]["action"], printed[i]);
  EXPECT_EQ(printed.empty(), r.out.find("actions, best expected gain first") == std::string::npos);
  ASSERT_EQ(j["charts"].size(), 1u);
  EXPECT_EQ(j["charts"][0]["series"].size(), 3u);  // the three measured runs
  const std::string html = read_file(report + "/index.html").value_or_throw();
  EXPECT_NE(html.find("data-bound"), std::string::npos);
  // A bad directory is refused before any measurement.
  expect_one_line_error(
      run("doctor --data " + data_ + " --report " + data_ + "/manifest.json", dir_), "--report");
}

TEST_F(DoctorCliTest, BadOptionsAndADistributedLaunchGiveOneLine) {
  expect_one_line_error(run("doctor --steps 0", dir_), "--steps");
  expect_one_line_error(run("doctor --seconds 0", dir_), "--seconds");
  expect_one_line_error(run("doctor --seconds x", dir_), "--seconds");
  expect_one_line_error(run("doctor --sample-cost-us -1", dir_), "--sample-cost-us");
  expect_one_line_error(run("doctor --data " + dir_ / "missing", dir_), "missing");
  expect_one_line_error(run("doctor --data " + data_ + " --trace " + dir_ / "no/such/t.json", dir_),
                        "--trace");
  expect_one_line_error(
      run("doctor --data " + data_, dir_,
          "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "
          "MASTER_PORT=29500"),
      "one process");
}

}  // namespace
}  // namespace stoker
