// Shards changed under a running `stoker` (docs/FORMAT.md, "Shards changed during a run"):
// truncated → one line naming the shard and a record of it, exit 1, the last checkpoint intact;
// overwritten in place → a checksum error with --verify always; replaced by rename → the run reads
// the old file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/classification.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/train/checkpoint.h"
#include "stoker/train/optimizers.h"
#include "stoker/util/atomic_file.h"

extern char** environ;

namespace stoker {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How long a run may take to map its shards, or to end once told to: far beyond what it needs.
constexpr auto kPatience = std::chrono::seconds(60);

// `stoker ARGS` running in the background, stdout and stderr going to files in `dir`; killed on
// destruction if it still runs.
class Background {
 public:
  Background(std::vector<std::string> args, const testing::TempDir& dir)
      : out_path_(dir / ("out-" + std::to_string(++runs_))), err_path_(out_path_ + ".err") {
    args.insert(args.begin(), testing::kStokerCliPath);
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    for (const auto& [fd, path] : {std::pair{1, &out_path_}, std::pair{2, &err_path_}}) {
      posix_spawn_file_actions_addopen(&files, fd, path->c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                       0644);
    }
    const int error = ::posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    if (error != 0)
      throw std::runtime_error(std::string("cannot start ") + testing::kStokerCliPath);
  }
  ~Background() {
    if (exit_code_ >= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  std::string out() const { return read_file(out_path_).value_or_throw(); }
  std::string err() const { return read_file(err_path_).value_or_throw(); }

  // Waits until the process has `file` mapped (per /proc/PID/maps); false if it ended first or
  // kPatience passed.
  bool wait_until_mapped(const std::string& file) {
    const std::string maps = "/proc/" + std::to_string(pid_) + "/maps";
    const std::string wanted = fs::canonical(file).string();
    for (const auto deadline = Clock::now() + kPatience; Clock::now() < deadline;) {
      if (ended()) return false;
      Result<std::string> text = read_file(maps);
      if (text.is_ok() && text.value().find(wanted) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  // The exit code (128 + the signal's number if a signal ended it); -1 if it still ran after
  // kPatience (it is killed then).
  int wait() {
    for (const auto deadline = Clock::now() + kPatience; Clock::now() < deadline;) {
      if (ended()) return exit_code_;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return -1;
  }

 private:
  bool ended() {
    int status = 0;
    if (exit_code_ < 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return exit_code_ >= 0;
  }

  static inline int runs_ = 0;
  std::string out_path_, err_path_;
  pid_t pid_ = 0;
  int exit_code_ = -1;
};

// `run` ended with exit code 1 and one line on stderr that holds each of `words`.
void expect_one_line_error(Background& run, const std::vector<std::string>& words) {
  EXPECT_EQ(run.wait(), 1) << run.err();
  const std::string err = run.err();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  for (const std::string& w : words) EXPECT_NE(err.find(w), std::string::npos) << err;
}

constexpr const char* kChangedSize = ": the file changed size while it was being read";

class ShardChangeCliTest : public ::testing::Test {
 protected:
  // A dataset of kRecords records in 7 shards of about 512 KiB at dir_/ds.
  std::string write_sharded_dataset() {
    const std::string ds = dir_ / "ds";
    testing::write_labelled_dataset(ds, kRecords, 10, uint64_t{512} << 10);
    EXPECT_TRUE(fs::exists(ds + "/shard-00006.stk"));
    return ds;
  }
  // `stoker train` on a rows dataset at dir_/data with checkpoints in dir_/ckpt (`extra` flags
  // added), returned once its first checkpoint is written.
  std::unique_ptr<Background> train_past_first_checkpoint(std::vector<std::string> extra) {
    testing::write_rows_dataset(dir_ / "data/train", 20000, 1);
    testing::write_rows_dataset(dir_ / "data/test", 500, 2);
    std::vector<std::string> args = {"train", "--data",           dir_ / "data", "--epochs",
                                     "1000",  "--batch",          "16",          "--workers",
                                     "1",     "--checkpoint-dir", checkpoints()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto train = std::make_unique<Background>(args, dir_);
    const auto deadline = Clock::now() + kPatience;
    while (!latest_checkpoint(checkpoints()).is_ok() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(latest_checkpoint(checkpoints()).is_ok()) << train->err();
    return train;
  }
  std::string checkpoints() const { return dir_ / "ckpt"; }
  static constexpr int64_t kRecords = 100000;
  testing::TempDir dir_;
};

TEST_F(ShardChangeCliTest, ATruncatedShardStopsTheLoaderNamingTheShard) {
  const std::string ds = write_sharded_dataset();
  const std::string shard = ds + "/shard-00002.stk";
  Background bench({"bench", "loader", "--data", ds, "--epochs", "100000", "--workers", "2"}, dir_);
  // Once the last shard is mapped, opening has checked shard 2: the truncation hits reads, not
  // the checks at open (which would report the damage as a corrupt index instead). Cut to
  // nothing: the index was copied at open, so only a cut into the records is ever read.
  ASSERT_TRUE(bench.wait_until_mapped(ds + "/shard-00006.stk")) << bench.err();
  fs::resize_file(shard, 0);
  expect_one_line_error(bench, {"stoker: " + shard + ": record ", kChangedSize});
}

TEST_F(ShardChangeCliTest, ATruncatedShardStopsTrainingAndTheLastCheckpointStaysIntact) {
  const std::unique_ptr<Background> train = train_past_first_checkpoint({});
  ASSERT_FALSE(HasFailure());
  const std::string shard = dir_ / "data/train/shard-00000.stk";
  fs::resize_file(shard, 0);
  expect_one_line_error(*train, {shard + ": record ", kChangedSize});

  ModelSpec spec;
  spec.height = 4;
  spec.width = 4;
  spec.num_classes = testing::kRowClasses;
  std::unique_ptr<Model> model = make_model("mlp", spec);
  auto optimizer = make_optimizer(OptimizerSpec{}, model->parameters());
  Result<CheckpointState> state = load_checkpoint(checkpoints(), *model, *optimizer);
  ASSERT_TRUE(state.is_ok()) << state.status().message();
  EXPECT_GT(state.value().step, 0);
}

// A shard overwritten in place with random bytes after the first epoch, under the default
// --verify once (its records were verified in that epoch and are not again): the labels read
// are checked against the model's classes, one line naming the shard and record.
TEST_F(ShardChangeCliTest, RandomBytesOverAVerifiedShardAreALabelErrorNamingTheRecord) {
  const std::unique_ptr<Background> train = train_past_first_checkpoint({"--no-eval"});
  ASSERT_FALSE(HasFailure());
  const std::string shard = dir_ / "data/train/shard-00000.stk";
  std::string noise(fs::file_size(shard), '\0');
  std::mt19937_64 rng(9);
  for (char& c : noise) c = static_cast<char>(rng());
  {
    std::fstream over(shard, std::ios::in | std::ios::out | std::ios::binary);  // no truncation
    over.write(noise.data(), static_cast<std::streamsize>(noise.size()));
  }
  expect_one_line_error(*train, {"stoker: " + shard + ": record ", "outside the model's"});
}

// Bytes changed in place, the size kept: --verify always finds the record on its next read.
TEST_F(ShardChangeCliTest, BytesOverwrittenInPlaceFailTheirChecksumWithVerifyAlways) {
  const std::string ds = write_sharded_dataset();
  auto [shard, offset] = testing::record_location(ds, kRecords - 10);
  Background bench({"bench", "loader", "--data", ds, "--epochs", "100000", "--verify", "always"},
                   dir_);
  ASSERT_TRUE(bench.wait_until_mapped(shard)) << bench.err();
  testing::flip_byte(shard, offset + 1);
  expect_one_line_error(bench, {shard, "record"});
}

// Another shard copied over one in place (the same size, every record of it valid on its own,
// as `cp other.stk shard.stk` leaves it once done): its records are not this shard's, and
// --verify always says so naming the shard instead of training on them.
TEST_F(ShardChangeCliTest, AShardSwappedInPlaceFailsWithVerifyAlways) {
  const std::string ds = write_sharded_dataset();
  const std::string shard = ds + "/shard-00001.stk";
  const std::string other = read_file(ds + "/shard-00002.stk", uint64_t{1} << 30).value_or_throw();
  ASSERT_EQ(other.size(), fs::file_size(shard));
  Background bench({"bench", "loader", "--data", ds, "--epochs", "100000", "--verify", "always"},
                   dir_);
  ASSERT_TRUE(bench.wait_until_mapped(ds + "/shard-00006.stk")) << bench.err();
  {
    std::fstream over(shard, std::ios::in | std::ios::out | std::ios::binary);  // no truncation
    over.write(other.data(), static_cast<std::streamsize>(other.size()));
  }
  expect_one_line_error(bench, {shard, "record", "checksum"});
}

// A shard replaced by rename: the run keeps the old file mapped and reads it to the end.
TEST_F(ShardChangeCliTest, AShardReplacedByRenameIsReadAsItWas) {
  const std::string ds = write_sharded_dataset();
  const std::string shard = ds + "/shard-00001.stk";
  Background bench(
      {"bench", "loader", "--json", "--data", ds, "--epochs", "40", "--min-seconds", "0"}, dir_);
  ASSERT_TRUE(bench.wait_until_mapped(shard)) << bench.err();
  ASSERT_TRUE(write_file_atomically(shard, "not a shard").is_ok());
  ASSERT_EQ(bench.wait(), 0) << bench.err();
  EXPECT_EQ(nlohmann::json::parse(bench.out())["samples"], 40 * kRecords);
}

}  // namespace
}  // namespace stoker
