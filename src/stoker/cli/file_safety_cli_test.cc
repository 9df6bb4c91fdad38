// What stoker promises about the user's files, end to end on the real binary: an output flag
// never overwrites or goes into an input (the data, the model, the checkpoint resumed), every
// output is proven writable before any work and the trained model survives a location that
// fails at the end, interrupts (one, two, three SIGINTs; SIGTERM) never lose a checkpoint or
// leave half-written folders behind, an interrupted or doubled `convert` leaves nothing, and
// inputs that contradict each other get one line.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "stoker/store/import/fashion_mnist.h"
#include "stoker/testing/classification.h"
#include "stoker/testing/cli_process.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/train_outputs.h"
#include "stoker/train/checkpoint.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::CliProcess;
using testing::expect_one_line_error;

// Every regular file under `dir` with its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file())
      files[entry.path().string()] = read_file(entry.path().string(), 1 << 30).value_or_throw();
  }
  return files;
}

// The names in `dir` that start with `prefix`.
std::vector<std::string> names_starting(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

class FileSafetyCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_rows_dataset(data_ + "/train", 2000, 1, {"a", "b", "c", "d"});
    testing::write_rows_dataset(data_ + "/test", 500, 2, {"a", "b", "c", "d"});
  }
  // `stoker train --data DATA ARGS`, run to its end.
  testing::RunResult train(const std::string& args) {
    return testing::run(fmt::format("train --data {} {}", data_, args), dir_,
                        "TMPDIR=" + tmp_.path());
  }
  CliProcess train_process(std::vector<std::string> args) {
    args.insert(args.begin(), {"train", "--data", data_});
    return CliProcess(args, dir_, {"TMPDIR=" + tmp_.path()});
  }

  testing::TempDir dir_;
  testing::TempDir tmp_;  // the children's temporary directory
  const std::string data_ = dir_ / "data";
};

TEST_F(FileSafetyCliTest, NoOutputFlagCanWriteIntoTheData) {
  const auto before = snapshot(data_);
  fs::create_directory_symlink(data_ + "/train", dir_ / "alias");
  fs::create_directories(dir_ / "elsewhere");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--trace", data_ + "/train/manifest.json"},
      {"--log", data_ + "/train/manifest.json"},
      {"--log", data_ + "/test/new.jsonl"},
      {"--save-model", data_ + "/train/shard-00000.stk"},
      {"--save-model", dir_ / "alias/model.pt"},
      {"--trace", dir_ / "elsewhere/../data/train/t.json"},
      {"--report", data_ + "/train"},
      {"--report", data_},
      {"--checkpoint-dir", data_ + "/test"},
  };
  for (const auto& [flag, path] : cases) {
    const testing::RunResult r = train(flag + " " + path);
    testing::expect_one_line_error(r, flag + " '" + path + "' is");
    EXPECT_NE(r.err.find("the training data"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("'" + data_), std::string::npos) << "names the input: " << r.err;
    EXPECT_EQ(r.out.find("epoch 1"), std::string::npos) << "refused before any work: " << r.out;
  }
  EXPECT_EQ(snapshot(data_), before) << "the data is untouched";
  EXPECT_EQ(testing::run("verify " + data_, dir_).exit_code, 0);
}

// Two outputs of one run that are one file — two flags with one path, or a flag naming a file
// that a directory output writes (the report's pages, the checkpoint directory's LATEST) —
// are refused before any work, in one line naming both.
TEST_F(FileSafetyCliTest, TwoOutputsNamingOneFileAreRefused) {
  // Each case in a folder of its own (@ below), holding the report and checkpoint folders and
  // sub/ (sub/.. is the folder itself only where sub exists), so that nothing but the
  // collision can refuse it: without the check, each one runs and overwrites.
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"--log @/h.jsonl --trace @/h.jsonl", "--log", "--trace"},
      {"--save-model @/m.pt --trace @/m.pt", "--trace", "--save-model"},
      {"--log @/m.pt --save-model @/sub/../m.pt", "--log", "--save-model"},
      {"--report @/r --save-model @/r/report.json", "--save-model", "--report"},
      {"--report @/r --trace @/r/index.html", "--trace", "--report"},
      {"--checkpoint-dir @/ck --save-model @/ck/LATEST", "--save-model", "--checkpoint-dir"},
      {"--checkpoint-dir @/ck --log @/ck/LATEST", "--log", "--checkpoint-dir"},
      {"--checkpoint-dir @/ck --trace @/ck/LATEST", "--trace", "--checkpoint-dir"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [pattern, first, second] = cases[i];
    const fs::path folder = dir_ / ("case" + std::to_string(i));
    for (const char* sub : {"sub", "r", "ck"}) fs::create_directories(folder / sub);
    std::string args = pattern;
    for (size_t at; (at = args.find('@')) != std::string::npos;)
      args.replace(at, 1, folder.string());
    const testing::RunResult run = train("--epochs 1 " + args);
    expect_one_line_error(run, first + " '");
    EXPECT_NE(run.err.find(second + " '"), std::string::npos) << args << ": " << run.err;
    EXPECT_EQ(run.out.find("epoch 1"), std::string::npos) << "refused before any work: " << run.out;
    for (const char* written : {"h.jsonl", "m.pt", "r/report.json", "ck/LATEST"})
      EXPECT_FALSE(fs::exists(folder / written)) << args;
  }
  // A log beside the checkpoints, under a name stoker does not write there, is fine.
  const std::string ck = dir_ / "case0/ck";
  EXPECT_EQ(train("--max-steps 2 --no-eval --checkpoint-dir " + ck + " --log " + ck + "/log.jsonl")
                .exit_code,
            0);
}

TEST_F(FileSafetyCliTest, TheModelLoadedAndTheCheckpointResumedAreInputsToo) {
  ASSERT_EQ(train("--max-steps 2 --no-eval --save-model " + dir_ / "m.pt").exit_code, 0);
  const std::string model = read_file(dir_ / "m.pt", 1 << 30).value_or_throw();
  expect_one_line_error(train("--model " + dir_ / "m.pt" + " --save-model " + dir_ / "m.pt"),
                        "a file of the model");
  EXPECT_EQ(read_file(dir_ / "m.pt", 1 << 30).value_or_throw(), model);

  ASSERT_EQ(train("--epochs 2 --max-steps 3 --checkpoint-dir " + dir_ / "ckpt").exit_code, 0);
  const std::string checkpoint = latest_checkpoint(dir_ / "ckpt").value_or_throw();
  expect_one_line_error(train("--epochs 2 --checkpoint-dir " + dir_ / "ckpt" +
                              " --resume --save-model " + checkpoint + "/model.pt"),
                        "a checkpoint being resumed");
  EXPECT_TRUE(find_checkpoint(dir_ / "ckpt").is_ok());
}

TEST_F(FileSafetyCliTest, AnUnwritableOutputIsFoundBeforeTraining) {
  std::ofstream(dir_ / "file") << "x";
  for (const char* flag : {"--save-model", "--trace", "--log"}) {
    const testing::RunResult r = train(fmt::format("{} {}", flag, dir_ / "file/out"));
    expect_one_line_error(r, flag);
    EXPECT_EQ(r.out.find("epoch 1"), std::string::npos) << flag << ": " << r.out;
  }
}

// --report creates its directory but not the parents, as --trace and --log create no directory:
// a mistyped path fails in one line and leaves nothing behind.
TEST_F(FileSafetyCliTest, AReportWhoseParentIsMissingIsRefusedLikeATrace) {
  const std::string missing = dir_ / "a/b";
  expect_one_line_error(
      train("--max-steps 1 --trace " + missing + "/t.json"),
      "--trace: " + missing + "/t.json: cannot create: no such directory " + missing);
  const testing::RunResult r = train("--max-steps 1 --report " + missing + "/c");
  expect_one_line_error(r, "--report: cannot create report directory " + missing +
                               "/c: no such directory " + missing);
  EXPECT_EQ(r.out.find("epoch 1"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "a"));
  EXPECT_EQ(train("--max-steps 1 --no-eval --report " + dir_ / "r").exit_code, 0)
      << "the report's own directory is made";
}

// A report replaces only a report stoker wrote: a user's index.html or report.json in the
// directory is refused before any work, in one line, and kept.
TEST_F(FileSafetyCliTest, AReportNeverReplacesAUsersPage) {
  const std::string r = dir_ / "r";
  ASSERT_EQ(train("--max-steps 1 --no-eval --report " + r).exit_code, 0);
  ASSERT_EQ(train("--max-steps 1 --no-eval --report " + r).exit_code, 0) << "its own, replaced";
  for (const char* name : {"index.html", "report.json"}) {
    const std::string mine = dir_ / "mine";
    fs::remove_all(mine);
    fs::create_directory(mine);
    std::ofstream(mine + "/" + name) << "{\"my\": \"notes\"}";
    const testing::RunResult run = train("--max-steps 1 --no-eval --report " + mine);
    expect_one_line_error(run, "--report: " + mine + "/" + name + ": not a report stoker wrote");
    EXPECT_EQ(run.out.find("epoch 1"), std::string::npos) << run.out;
    EXPECT_EQ(read_file(mine + "/" + name).value_or_throw(), "{\"my\": \"notes\"}");
  }
}

// --log appends to a log of stoker's only: a file of the user's is refused before any work,
// in one line naming it and its first line that is not a record, and kept as it was.
TEST_F(FileSafetyCliTest, ALogIsNeverAppendedToAFileThatIsNotALog) {
  const std::string notes = dir_ / "notes.txt";
  std::ofstream(notes) << "buy milk\nno newline";
  const testing::RunResult r =
      train("--max-steps 1 --no-eval --checkpoint-dir " + dir_ / "ck" + " --log " + notes);
  expect_one_line_error(r, notes + " is not a stoker log (line 1 is not a record stoker wrote)");
  EXPECT_EQ(r.out.find("epoch 1"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(notes).value_or_throw(), "buy milk\nno newline");
  EXPECT_FALSE(fs::exists(dir_ / "ck")) << "refused before any work";
  // The same file as two outputs: that collision is what is said, naming both.
  const testing::RunResult both = train("--log " + notes + " --trace " + notes);
  expect_one_line_error(both, "--log '" + notes + "'");
  EXPECT_NE(both.err.find("--trace '" + notes + "'"), std::string::npos) << both.err;

  const std::string log = dir_ / "log.jsonl";
  for (int run = 1; run <= 2; ++run)
    ASSERT_EQ(train("--max-steps 1 --no-eval --log " + log).exit_code, 0) << "a log: appended";
  EXPECT_EQ(testing::log_records(log, "run").size(), 2u);
}

TEST_F(FileSafetyCliTest, AModelThatCannotBeSavedAtTheEndIsSavedElsewhere) {
  fs::create_directory(dir_ / "out");
  CliProcess run = train_process(
      {"--epochs", "3", "--batch", "16", "--workers", "1", "--save-model", dir_ / "out/model.pt"});
  ASSERT_TRUE(run.wait_for_output("epoch 1/3")) << run.err();
  fs::remove_all(dir_ / "out");  // the location goes away while the run goes on
  std::ofstream(dir_ / "out") << "now a file";
  EXPECT_EQ(run.wait(), 1) << run.err();
  const std::string err = run.err();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  const std::string says = "the trained model was saved to ";
  const size_t at = err.find(says);
  ASSERT_NE(at, std::string::npos) << err;
  const std::string rescue = err.substr(at + says.size(), err.find(" instead") - at - says.size());
  EXPECT_EQ(rescue.rfind(tmp_.path() + "/stoker-rescue-", 0), 0u) << rescue;
  EXPECT_TRUE(fs::is_regular_file(rescue)) << rescue;
  // The rescued model is the trained one: it loads and trains on.
  EXPECT_EQ(train("--max-steps 1 --no-eval --model " + rescue).exit_code, 0);
}

TEST_F(FileSafetyCliTest, EmptyPathsAreRefusedNotTakenForTheDefault) {
  for (const char* flag :
       {"--data", "--log", "--checkpoint-dir", "--trace", "--report", "--save-model"}) {
    const testing::RunResult r = testing::run(fmt::format("train {} ''", flag), dir_);
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_EQ(r.err, fmt::format("stoker: {}: the path is empty: give a path, or leave {} out "
                                 "for its default\n",
                                 flag, flag));
  }
  EXPECT_EQ(testing::run("convert idx --images '' --labels x --out y", dir_).exit_code, 2);
  EXPECT_EQ(testing::run("verify ''", dir_).exit_code, 2);
}

TEST_F(FileSafetyCliTest, AModelPathOfTheWrongKindSaysWhatItIs) {
  fs::create_directory(dir_ / "dir.pt");
  testing::make_fifo(dir_ / "fifo.pt");
  expect_one_line_error(train("--model " + dir_ / "dir.pt"), "not a regular file (a directory)");
  expect_one_line_error(train("--model " + dir_ / "fifo.pt"), "not a regular file (a FIFO)");
  expect_one_line_error(train("--model " + dir_ / "none.pt"), "does not exist");
}

TEST_F(FileSafetyCliTest, TrainAndTestSetsWithOtherClassNamesAreRefused) {
  fs::remove_all(data_ + "/test");
  testing::write_rows_dataset(data_ + "/test", 500, 2, {"a", "b", "x", "d"});
  expect_one_line_error(train("--max-steps 1"),
                        "name their classes differently (label 2: 'c' in training, 'x' in the "
                        "test; 4 and 4 classes)");
  EXPECT_EQ(train("--max-steps 1 --no-eval").exit_code, 0) << "training alone is fine";
}

TEST_F(FileSafetyCliTest, ABatchLargerThanTheDataGivesOneLine) {
  expect_one_line_error(train("--batch 2001"),
                        "batch size 2001 is more than the 2000 samples of " + data_ + "/train");
  EXPECT_EQ(train("--batch 2000 --epochs 1").exit_code, 0) << "one batch of all of it";
}

// A dataset of no records (all its files skipped at import) is refused in one line that says
// so, not taken for a batch size too large.
TEST_F(FileSafetyCliTest, AnEmptyDatasetIsRefusedSayingSo) {
  for (const std::vector<std::string>& classes :
       {std::vector<std::string>{"a", "b"}, std::vector<std::string>{}}) {
    fs::remove_all(dir_ / "empty");
    testing::write_rows_dataset(dir_ / "empty", 0, 1, classes);
    const testing::RunResult r = testing::run("train --data " + dir_ / "empty", dir_);
    expect_one_line_error(r, dir_ / "empty" + " holds no records: there is nothing to train on");
    EXPECT_EQ(r.err.find("batch size"), std::string::npos) << r.err;
  }
}

TEST_F(FileSafetyCliTest, ACheckpointEditedToAnImpossibleStepIsRefused) {
  ASSERT_EQ(train("--epochs 2 --max-steps 7 --checkpoint-dir " + dir_ / "ckpt").exit_code, 0);
  const std::string meta = latest_checkpoint(dir_ / "ckpt").value_or_throw() + "/meta.json";
  nlohmann::json j = nlohmann::json::parse(read_file(meta).value_or_throw());
  ASSERT_EQ(j["step"], 7);
  for (int64_t step : {int64_t{6}, int64_t{8}, int64_t{1} << 40}) {
    j["step"] = step;
    throw_if_error(write_file_atomically(meta, j.dump()));
    expect_one_line_error(train("--epochs 2 --checkpoint-dir " + dir_ / "ckpt" + " --resume"),
                          fmt::format("step {} does not match where its data stands", step));
  }
  j["step"] = 7;
  throw_if_error(write_file_atomically(meta, j.dump()));
  EXPECT_EQ(train("--epochs 2 --checkpoint-dir " + dir_ / "ckpt" + " --resume").exit_code, 0);
}

// A number no 64-bit counter holds (10^30, or a negative seed) is named with its file and key,
// never wrapped into a negative step.
TEST_F(FileSafetyCliTest, ACheckpointNumberOutOfRangeIsNamedWithItsFileAndKey) {
  ASSERT_EQ(train("--epochs 2 --max-steps 7 --checkpoint-dir " + dir_ / "ckpt").exit_code, 0);
  const std::string meta = latest_checkpoint(dir_ / "ckpt").value_or_throw() + "/meta.json";
  const nlohmann::json j = nlohmann::json::parse(read_file(meta).value_or_throw());
  for (const auto& [key, number, words] : std::vector<std::array<std::string, 3>>{
           {"/step", "1000000000000000000000000000000", "step 1e+30"},
           {"/run/seed", "-1", "seed -1"},
           {"/loader/position", "18446744073709551615", "loader position 18446744073709551615"}}) {
    nlohmann::json changed = j;
    changed[nlohmann::json::json_pointer(key)] = "NUMBER";
    std::string text = changed.dump();
    text.replace(text.find("\"NUMBER\""), 8, number);
    throw_if_error(write_file_atomically(meta, text));
    const testing::RunResult r =
        train("--epochs 2 --checkpoint-dir " + dir_ / "ckpt" + " --resume");
    expect_one_line_error(r, meta + ": not a valid checkpoint description: " + words +
                                 " is out of range (a whole number from ");
    EXPECT_EQ(r.err.find("-9223372036854775808 is"), std::string::npos) << r.err;
  }
}

// A checkpoint's tensor files belong to its meta.json: one that is missing, or another run's
// model.pt copied in (same model, same shapes), is refused in one line naming the checkpoint
// and the file, and the checkpoint stays as it was.
TEST_F(FileSafetyCliTest, ACheckpointMissingAFileOrHoldingAnotherRunsModelIsRefused) {
  const std::string run = "--epochs 2 --max-steps 3 --no-eval --checkpoint-dir ";
  ASSERT_EQ(train(run + dir_ / "ck").exit_code, 0);
  ASSERT_EQ(train(run + dir_ / "other" + " --seed 9").exit_code, 0);
  const std::string checkpoint = latest_checkpoint(dir_ / "ck").value_or_throw();
  const std::string other = latest_checkpoint(dir_ / "other").value_or_throw();
  const std::string resume = "--epochs 2 --no-eval --resume --checkpoint-dir " + dir_ / "ck";

  fs::rename(checkpoint + "/rng.pt", dir_ / "rng.keep");
  testing::RunResult r = train(resume);
  expect_one_line_error(r, "checkpoint " + checkpoint + " has no rng.pt");
  EXPECT_EQ(r.err.find("fopen"), std::string::npos) << r.err;
  fs::rename(dir_ / "rng.keep", checkpoint + "/rng.pt");

  fs::rename(checkpoint + "/model.pt", dir_ / "model.keep");
  fs::copy_file(other + "/model.pt", checkpoint + "/model.pt");
  expect_one_line_error(
      train(resume),
      "checkpoint " + checkpoint + ": model.pt is not the file written with this checkpoint");
  EXPECT_EQ(latest_checkpoint(dir_ / "ck").value_or_throw(), checkpoint);
  fs::remove(checkpoint + "/model.pt");
  fs::rename(dir_ / "model.keep", checkpoint + "/model.pt");
  EXPECT_EQ(train(resume).exit_code, 0) << "its own files resume";
}

// A second SIGINT while the run stops says it is finishing its checkpoint; the run ends with
// its checkpoint complete. A third quits at once: the previous checkpoint stays current, and
// the next run removes the half-written one. Steps of a third of a second (a synthetic cost on
// one worker) make sure the signals, 20 ms apart (the kernel merges a signal still pending),
// arrive while the run is still stopping.
TEST_F(FileSafetyCliTest, RepeatedInterruptsNeverLoseTheLastCheckpoint) {
  testing::write_rows_dataset(dir_ / "small/train", 64, 3);
  for (int interrupts : {2, 3}) {
    const std::string ckpt = dir_ / ("ckpt" + std::to_string(interrupts));
    CliProcess run(
        CliProcess::with_command(
            "train", {"--data", dir_ / "small", "--epochs", "3", "--batch", "16", "--workers", "1",
                      "--sample-cost-us", "20000", "--checkpoint-dir", ckpt}),
        dir_);
    ASSERT_TRUE(run.wait_for_output("epoch 1/3")) << run.err();
    // The epoch's line comes before its checkpoint.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!latest_checkpoint(ckpt).is_ok() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(latest_checkpoint(ckpt).is_ok()) << run.err();
    for (int i = 0; i < interrupts; ++i) {
      run.signal(SIGINT);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(run.wait(), 130) << run.err();
    const std::string err = run.err();
    if (interrupts == 2) {
      EXPECT_NE(err.find("stoker: stopping after this step, writing its checkpoint"),
                std::string::npos)
          << err;
      EXPECT_NE(err.find("continue with --resume"), std::string::npos) << err;
      EXPECT_NE(err.find(latest_checkpoint(ckpt).value_or_throw()), std::string::npos)
          << "the checkpoint it names is the current one: " << err;
    } else {
      EXPECT_NE(err.find("stoker: quit at once"), std::string::npos) << err;
    }
    // Whatever the moment, LATEST names a complete checkpoint, and a resume cleans up.
    const Result<FoundCheckpoint> found = find_checkpoint(ckpt);
    ASSERT_TRUE(found.is_ok()) << found.status().message();
    EXPECT_TRUE(found.value().note.empty()) << found.value().note;
    const testing::RunResult resumed = testing::run(
        fmt::format("train --data {} --epochs 3 --batch 16 --checkpoint-dir {} --resume "
                    "--sample-cost-us 20000",
                    dir_ / "small", ckpt),
        dir_);
    EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_TRUE(names_starting(ckpt, ".partial-").empty());
  }
}

// stdout's reader gone (`train | head -1`: SIGPIPE at the next line) and a closed terminal
// (SIGHUP) stop the run as SIGTERM does: with its checkpoint and a line saying so, never killed
// between an epoch's line and its checkpoint.
TEST_F(FileSafetyCliTest, SigpipeAndSighupStopTheRunWithItsCheckpoint) {
  const std::string piped = dir_ / "piped";
  const testing::RunResult head =
      train("--epochs 1000 --checkpoint-dir " + piped + " 2>" + dir_ / "piped.err" + " | head -1");
  EXPECT_EQ(head.exit_code, 0);
  EXPECT_TRUE(latest_checkpoint(piped).is_ok()) << "no checkpoint after SIGPIPE";
  EXPECT_NE(read_file(dir_ / "piped.err").value_or_throw().find("interrupted in epoch"),
            std::string::npos);

  const std::string hung = dir_ / "hung";
  CliProcess run = train_process({"--epochs", "1000", "--checkpoint-dir", hung});
  ASSERT_TRUE(run.wait_for_output("epoch 1/")) << run.err();
  run.signal(SIGHUP);
  EXPECT_EQ(run.wait(), 130) << run.err();
  EXPECT_NE(run.err().find("interrupted in epoch"), std::string::npos) << run.err();
  EXPECT_TRUE(latest_checkpoint(hung).is_ok());
}

class ConvertSafetyCliTest : public ::testing::Test {
 protected:
  // `stoker convert fashion-mnist --out OUT`, started.
  CliProcess convert(const std::string& out) {
    return CliProcess({"convert", "fashion-mnist", "--src", kFashionMnistDebianDir, "--out", out},
                      dir_);
  }
  // Waits until OUT/train's staging directory appears: the conversion has started writing.
  bool wait_for_staging(const std::string& out) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!fs::is_directory(out) || names_starting(out, "train.partial-").empty()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }
  testing::TempDir dir_;
};

TEST_F(ConvertSafetyCliTest, AnInterruptedConversionSaysSoAndLeavesNothing) {
  // SIGHUP (a closed terminal) and SIGPIPE (stdout's reader gone) as SIGINT and SIGTERM.
  for (const auto& [signal, name] : std::vector<std::pair<int, std::string>>{
           {SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}, {SIGPIPE, "SIGPIPE"}}) {
    const std::string out = dir_ / ("fm" + std::to_string(signal));
    CliProcess run = convert(out);
    ASSERT_TRUE(wait_for_staging(out)) << run.err();
    run.signal(signal);
    EXPECT_EQ(run.wait(), 130) << run.err();
    const std::string err = run.err();
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("interrupted (" + name + ")"), std::string::npos) << err;
    EXPECT_NE(err.find("nothing was written to " + out + "/train"), std::string::npos) << err;
    EXPECT_TRUE(!fs::exists(out) || fs::is_empty(out)) << "nothing left in " << out;
  }
}

TEST_F(ConvertSafetyCliTest, ASecondConversionToTheSameOutputIsRefusedAtTheStart) {
  const std::string out = dir_ / "fm";
  CliProcess first = convert(out);
  ASSERT_TRUE(wait_for_staging(out)) << first.err();
  const testing::RunResult second = testing::run(
      fmt::format("convert fashion-mnist --src {} --out {}", kFashionMnistDebianDir, out), dir_);
  if (first.wait() == 0) {  // the second one ran while the first wrote, or found it done:
    // refused, naming the split it found written or being written
    testing::expect_one_line_error(second, out + "/");
  }
  EXPECT_EQ(first.wait(), 0) << first.err();
  EXPECT_EQ(testing::run("verify " + out, dir_).exit_code, 0);
}

// `..` after a symbolic link is the link target's parent, as the kernel reads it: the dataset is
// written there (where the output checks looked), not beside the link as the text reads.
TEST_F(ConvertSafetyCliTest, AnOutputThroughALinksDotDotIsWrittenWhereTheKernelResolvesIt) {
  fs::create_directories(dir_ / "lx");
  fs::create_directories(dir_ / "elsewhere/dl");
  fs::create_directory_symlink(dir_ / "elsewhere/dl", dir_ / "lx/dl");
  const testing::RunResult r =
      testing::run(fmt::format("convert fashion-mnist --src {} --out {}", kFashionMnistDebianDir,
                               dir_ / "lx/dl/../lexi"),
                   dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::run("verify " + dir_ / "elsewhere/lexi", dir_).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "lx/lexi"));
}

// Folders of the user's named like staging directories beside a dataset being written are left
// as they are: stoker removes only what it can prove it staged.
TEST_F(ConvertSafetyCliTest, AUsersFolderNamedLikeStagingIsKept) {
  for (const char* name : {"outs/train.partial-mybackup", "outs/test.partial-77"}) {
    fs::create_directories(dir_ / name);
    std::ofstream(dir_ / name + "/notes.txt") << "mine";
  }
  const testing::RunResult r = testing::run(
      fmt::format("convert fashion-mnist --src {} --out {}", kFashionMnistDebianDir, dir_ / "outs"),
      dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"outs/train.partial-mybackup", "outs/test.partial-77"})
    EXPECT_TRUE(fs::exists(dir_ / name + "/notes.txt")) << name;
}

// A conversion killed between its splits (train/ complete, test/ staged when SIGKILL came)
// resumes when run again; training on the half-converted folder meanwhile says what is missing.
TEST_F(ConvertSafetyCliTest, AConversionKilledBetweenItsSplitsResumes) {
  const std::string out = dir_ / "fm";
  const std::string command =
      fmt::format("convert fashion-mnist --src {} --out {}", kFashionMnistDebianDir, out);
  ASSERT_EQ(testing::run(command, dir_).exit_code, 0);
  fs::remove_all(out + "/test");
  fs::create_directories(out + "/test.partial-999999");  // what the kill left, empty
  const testing::RunResult half =
      testing::run("train --data " + out + " --max-steps 1 --batch 8", dir_);
  EXPECT_EQ(half.exit_code, 0) << half.err;
  EXPECT_NE(half.out.find(out + " holds train/ but no test/ or val/"), std::string::npos)
      << half.out;
  const testing::RunResult again = testing::run(command, dir_);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(testing::run("verify " + out, dir_).exit_code, 0);
  EXPECT_TRUE(names_starting(out, "test.partial-").empty());
}

TEST_F(ConvertSafetyCliTest, AnOutputInsideTheSourceIsRefused) {
  testing::write_rows_dataset(dir_ / "src/cat/x", 1, 1);  // some folders to convert
  const testing::RunResult r = testing::run(
      fmt::format("convert imagefolder {} --out {}", dir_ / "src", dir_ / "src/out"), dir_);
  testing::expect_one_line_error(r, "--out '" + dir_ / "src/out" + "' is inside the source");
  EXPECT_FALSE(fs::exists(dir_ / "src/out"));
}

}  // namespace
}  // namespace stoker
