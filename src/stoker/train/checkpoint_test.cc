#include "stoker/train/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stoker/testing/temp_dir.h"
#include "stoker/train/optimizers.h"
#include "stoker/train/training_setup.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

ModelSpec small_spec() {
  ModelSpec spec;
  spec.channels = 1;
  spec.height = 4;
  spec.width = 4;
  spec.num_classes = 3;
  return spec;
}

// A model and its Adam optimizer, stepped on fixed data so both carry state.
struct Training {
  Training() : model(make_model("mlp", small_spec())) {
    optimizer = make_optimizer(OptimizerSpec{}, model->parameters());
  }
  void step(int i) {
    torch::manual_seed(100 + i);
    at::Tensor x = torch::randn({8, 1, 4, 4});
    at::Tensor y = torch::randint(0, 3, {8});
    optimizer->zero_grad();
    torch::cross_entropy_loss(model->forward(x), y).backward();
    optimizer->step();
  }
  std::vector<at::Tensor> snapshot() {
    std::vector<at::Tensor> out;
    for (const auto& [name, t] : model->named_state()) out.push_back(t.detach().clone());
    return out;
  }

  std::unique_ptr<Model> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

void expect_equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i;
}

CheckpointState sample_state() {
  CheckpointState state;
  state.run = {"0123456789abcdef", "mlp",          "adam", "cosine", 64, 1, 7,
               {0.25f, 0.5f},      {0.125f, 0.2f}, 16,     3,        {}};
  state.step = 17;
  state.loader = {7, 2, 640, 16, 3};
  state.scaler = {1024.0, 5};
  state.epoch_loss_sum = 123.456789012345678;
  state.epoch_samples = 640;
  state.run_steps = 4690;
  return state;
}

// The subdirectories of `dir` (checkpoints, complete or not).
std::vector<std::string> subdirs(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointTest, RoundTripRestoresModelOptimizerRngAndState) {
  testing::TempDir dir;
  Training a;
  a.step(0);
  ASSERT_TRUE(save_checkpoint(dir.path(), sample_state(), *a.model, *a.optimizer).is_ok());
  const std::vector<at::Tensor> saved = a.snapshot();
  const at::Tensor random_after_save = torch::rand({4});
  a.step(1);  // what the resumed run must reproduce
  const std::vector<at::Tensor> stepped = a.snapshot();

  Training b;  // fresh weights and an optimizer without state
  Result<CheckpointState> state = load_checkpoint(dir.path(), *b.model, *b.optimizer);
  ASSERT_TRUE(state.is_ok()) << state.status().message();
  expect_equal(b.snapshot(), saved);
  EXPECT_TRUE(torch::equal(torch::rand({4}), random_after_save)) << "RNG state not restored";
  b.step(1);
  expect_equal(b.snapshot(), stepped);  // Adam's moments and step count came back too

  const CheckpointState& s = state.value();
  const CheckpointState expected = sample_state();
  EXPECT_EQ(run_difference(s.run, expected.run), "");
  EXPECT_EQ(s.run.data, expected.run.data);
  EXPECT_EQ(s.run.seed, expected.run.seed);
  EXPECT_EQ(s.run.mean, expected.run.mean);
  EXPECT_EQ(s.run.std, expected.run.std);
  EXPECT_EQ(s.step, expected.step);
  EXPECT_EQ(s.loader.seed, expected.loader.seed);
  EXPECT_EQ(s.loader.epoch, expected.loader.epoch);
  EXPECT_EQ(s.loader.position, expected.loader.position);
  EXPECT_EQ(s.run.shuffle_window, 16);
  EXPECT_EQ(s.loader.shuffle_window, 16);
  EXPECT_EQ(s.run.ra_reps, 3);
  EXPECT_EQ(s.loader.ra_reps, 3);
  EXPECT_EQ(s.scaler.scale, expected.scaler.scale);
  EXPECT_EQ(s.scaler.good_steps, expected.scaler.good_steps);
  EXPECT_EQ(s.epoch_loss_sum, expected.epoch_loss_sum);
  EXPECT_EQ(s.epoch_samples, expected.epoch_samples);
  EXPECT_EQ(s.run_steps, expected.run_steps);
}

TEST(CheckpointTest, NewCheckpointReplacesTheOldAndCrashLeftoversAreIgnored) {
  testing::TempDir dir;
  Training a;
  CheckpointState state = sample_state();
  ASSERT_TRUE(save_checkpoint(dir.path(), state, *a.model, *a.optimizer).is_ok());
  const std::string first = latest_checkpoint(dir.path()).value_or_throw();
  EXPECT_EQ(fs::path(first).filename().string().rfind("step-00000017-", 0), 0u) << first;

  // A crash in the middle of writing leaves a partial directory that nothing points to (with
  // the marker, written first), or an empty one (a crash before the marker); so did a stoker
  // before partial directories had their own name (an empty marker, or none).
  fs::create_directory(dir / ".partial-step-00000018-crash1");
  std::ofstream(dir / ".partial-step-00000018-crash1/.stoker-checkpoint") << "step-00000018-crash1";
  std::ofstream(dir / ".partial-step-00000018-crash1/model.pt") << "half";
  fs::create_directory(dir / ".partial-step-00000018-crash2");
  fs::create_directory(dir / "step-00000018-crash3");
  std::ofstream(dir / "step-00000018-crash3/.stoker-checkpoint");
  std::ofstream(dir / "step-00000018-crash3/model.pt") << "half";
  fs::create_directory(dir / "step-00000018-crash4");
  EXPECT_EQ(latest_checkpoint(dir.path()).value_or_throw(), first);

  a.step(0);
  state.step = 18;
  ASSERT_TRUE(save_checkpoint(dir.path(), state, *a.model, *a.optimizer).is_ok());
  const std::string second = latest_checkpoint(dir.path()).value_or_throw();
  EXPECT_NE(second, first);
  EXPECT_EQ(subdirs(dir.path()), std::vector<std::string>{fs::path(second).filename().string()});

  Training b;
  ASSERT_TRUE(load_checkpoint(dir.path(), *b.model, *b.optimizer).is_ok());
  expect_equal(b.snapshot(), a.snapshot());
}

// A model whose save always fails, standing in for a full disk in the middle of a checkpoint.
class UnsavableModel final : public Model {
 public:
  explicit UnsavableModel(Model& inner) : inner_(inner) {}
  at::Tensor forward(const at::Tensor& x) override { return inner_.forward(x); }
  std::vector<at::Tensor> parameters() override { return inner_.parameters(); }
  NamedTensors named_state() override { return inner_.named_state(); }
  void train(bool on) override { inner_.train(on); }
  bool is_training() const override { return inner_.is_training(); }
  void to(const c10::Device& device) override { inner_.to(device); }
  std::string name() const override { return inner_.name(); }
  Status save(const std::string& path, const InputNormalization&) override {
    return io_error(path + ": disk full");
  }
  Status save_state(const std::string& path) override { return io_error(path + ": disk full"); }
  Status load(const std::string& path) override { return inner_.load(path); }

 private:
  Model& inner_;
};

TEST(CheckpointTest, FailedSaveKeepsThePreviousCheckpoint) {
  testing::TempDir dir;
  Training a;
  ASSERT_TRUE(save_checkpoint(dir.path(), sample_state(), *a.model, *a.optimizer).is_ok());
  const std::string good = latest_checkpoint(dir.path()).value_or_throw();
  const std::vector<at::Tensor> saved = a.snapshot();

  a.step(0);
  UnsavableModel failing(*a.model);
  CheckpointState state = sample_state();
  state.step = 99;
  Status s = save_checkpoint(dir.path(), state, failing, *a.optimizer);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("disk full"), std::string::npos) << s.message();
  EXPECT_EQ(latest_checkpoint(dir.path()).value_or_throw(), good);
  EXPECT_EQ(subdirs(dir.path()).size(), 1u) << "the failed attempt left a directory behind";

  Training b;
  Result<CheckpointState> loaded = load_checkpoint(dir.path(), *b.model, *b.optimizer);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  EXPECT_EQ(loaded.value().step, 17);
  expect_equal(b.snapshot(), saved);
}

TEST(CheckpointTest, LoadErrorsNameTheProblem) {
  testing::TempDir dir;
  Training a;
  EXPECT_EQ(latest_checkpoint(dir.path()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(load_checkpoint(dir.path(), *a.model, *a.optimizer).status().code(),
            StatusCode::kNotFound);

  ASSERT_TRUE(save_checkpoint(dir.path(), sample_state(), *a.model, *a.optimizer).is_ok());
  std::unique_ptr<Model> cnn = make_model("cnn", small_spec());
  auto cnn_optimizer = make_optimizer(OptimizerSpec{}, cnn->parameters());
  Status other = load_checkpoint(dir.path(), *cnn, *cnn_optimizer).status();
  EXPECT_EQ(other.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("written for model mlp, not cnn"), std::string::npos)
      << other.message();

  const std::string sub = latest_checkpoint(dir.path()).value_or_throw();
  const std::string meta = read_file(sub + "/meta.json").value_or_throw();
  ASSERT_TRUE(write_file_atomically(sub + "/meta.json", "{\"format_version\": 2}").is_ok());
  Status bad_meta = load_checkpoint(dir.path(), *a.model, *a.optimizer).status();
  EXPECT_EQ(bad_meta.code(), StatusCode::kCorrupt);
  EXPECT_NE(bad_meta.message().find(sub + "/meta.json"), std::string::npos) << bad_meta.message();

  // Values out of range are refused by name, before anything is loaded.
  for (const auto& [from, to, words] : std::vector<std::array<std::string, 3>>{
           {"\"step\": 17", "\"step\": -3", "step -3"},
           {"\"position\": 640", "\"position\": -1", "loader position -1"},
           {"\"shuffle_window\": 16", "\"shuffle_window\": 4",
            "loader shuffle_window 4 (the run's: 16)"},
           {"\"ra_reps\": 3", "\"ra_reps\": 0", "loader ra_reps 0 (the run's: 3)"},
           {"\"scale\": 1024.0", "\"scale\": 0.0", "loss scale 0"},
           {"\"epoch_samples\": 640", "\"epoch_samples\": 641", "epoch_samples 641"},
           {"\"batch_size\": 64", "\"batch_size\": 0", "batch_size 0"},
           {"0.125,", "0.0,", "input normalisation mean 0.25 std 0"},
           {"0.125,", "0.125, 0.3,", "mean and std of different lengths"}}) {
    std::string changed = meta;
    ASSERT_NE(changed.find(from), std::string::npos) << from << " in " << meta;
    changed.replace(changed.find(from), from.size(), to);
    ASSERT_TRUE(write_file_atomically(sub + "/meta.json", changed).is_ok());
    Status bad = find_checkpoint(dir.path()).status();
    EXPECT_EQ(bad.code(), StatusCode::kCorrupt) << words;
    EXPECT_NE(bad.message().find(sub + "/meta.json: not a valid checkpoint description: " + words),
              std::string::npos)
        << bad.message();
  }
  // Written before the shuffle window was recorded: the global shuffle's.
  nlohmann::json unwindowed = nlohmann::json::parse(meta);
  unwindowed["run"].erase("shuffle_window");
  unwindowed["loader"].erase("shuffle_window");
  unwindowed["run"].erase("ra_reps");
  unwindowed["loader"].erase("ra_reps");
  ASSERT_TRUE(write_file_atomically(sub + "/meta.json", unwindowed.dump()).is_ok());
  Result<FoundCheckpoint> before_windows = find_checkpoint(dir.path());
  ASSERT_TRUE(before_windows.is_ok()) << before_windows.status().message();
  EXPECT_EQ(before_windows.value().state.run.shuffle_window, kShuffleAll);
  EXPECT_EQ(before_windows.value().state.loader.shuffle_window, kShuffleAll);
  EXPECT_EQ(before_windows.value().state.run.ra_reps, 1);
  EXPECT_EQ(before_windows.value().state.loader.ra_reps, 1);

  std::string old = meta;
  old.replace(old.find("\"format_version\": 2"), 19, "\"format_version\": 1");
  ASSERT_TRUE(write_file_atomically(sub + "/meta.json", old).is_ok());
  EXPECT_EQ(find_checkpoint(dir.path()).status().code(), StatusCode::kUnsupported);

  ASSERT_TRUE(write_file_atomically(dir / "LATEST", "step-missing\n").is_ok());
  Status dangling = latest_checkpoint(dir.path()).status();
  EXPECT_EQ(dangling.code(), StatusCode::kCorrupt);
  EXPECT_NE(dangling.message().find("step-missing"), std::string::npos) << dangling.message();
}

// Cleanup removes only what stoker wrote: the user's files and folders, even named step-*, and
// links stay.
TEST(CheckpointTest, CleanupRemovesOnlyItsOwnCheckpoints) {
  testing::TempDir dir;
  testing::TempDir elsewhere;
  Training a;
  std::ofstream(dir / "step-notes.txt") << "mine";
  fs::create_directory(dir / "step-00000001-mine12");
  std::ofstream(dir / "step-00000001-mine12/results.csv") << "mine";
  fs::create_directory(dir / "step-results");
  std::ofstream(elsewhere / ".stoker-checkpoint");
  fs::create_directory_symlink(elsewhere.path(), dir / "step-00000002-link12");
  CheckpointState state = sample_state();
  for (int64_t step : {17, 18, 19}) {
    state.step = step;
    ASSERT_TRUE(save_checkpoint(dir.path(), state, *a.model, *a.optimizer).is_ok());
  }
  EXPECT_TRUE(fs::exists(dir / "step-notes.txt"));
  EXPECT_TRUE(fs::exists(dir / "step-00000001-mine12/results.csv"));
  EXPECT_TRUE(fs::is_directory(dir / "step-results"));
  EXPECT_TRUE(fs::exists(elsewhere / ".stoker-checkpoint"));
  EXPECT_EQ(subdirs(dir.path()).size(), 4u);  // the three above and the last checkpoint
}

// A user's copy of a checkpoint (cp -r, or a renamed one) is never deleted, even when its name
// looks like stoker's: the marker names the directory stoker wrote.
TEST(CheckpointTest, CopiesOfACheckpointAreTheUsers) {
  testing::TempDir dir;
  Training a;
  CheckpointState state = sample_state();
  ASSERT_TRUE(save_checkpoint(dir.path(), state, *a.model, *a.optimizer).is_ok());
  const std::string first = latest_checkpoint(dir.path()).value_or_throw();
  fs::copy(first, dir / "step-00000017-backup", fs::copy_options::recursive);
  fs::copy(first, dir / "keep-this", fs::copy_options::recursive);
  for (int64_t step : {18, 19}) {
    state.step = step;
    ASSERT_TRUE(save_checkpoint(dir.path(), state, *a.model, *a.optimizer).is_ok());
  }
  EXPECT_FALSE(fs::exists(first));
  EXPECT_TRUE(fs::exists(dir / "step-00000017-backup/model.pt"));
  EXPECT_TRUE(fs::exists(dir / "keep-this/model.pt"));
  EXPECT_EQ(subdirs(dir.path()).size(), 3u);
}

// Partial checkpoints — a save cut short by a second interrupt or a kill — are stoker's by
// their name alone and removed by the next run (remove_partial_checkpoints) or the next save.
TEST(CheckpointTest, PartialCheckpointsAreRemovedByName) {
  testing::TempDir dir;
  fs::create_directory(dir / ".partial-step-00000003-abc123");
  std::ofstream(dir / ".partial-step-00000003-abc123/model.pt") << "half";
  fs::create_directory(dir / ".partial-step-00000004-xyz789");
  fs::create_directory(dir / ".partial-notes");                // not stoker's name: stays
  fs::create_directory(dir / "partial-step-00000004-xyz789");  // nor this
  EXPECT_EQ(remove_partial_checkpoints(dir.path()), 2);
  EXPECT_EQ(subdirs(dir.path()),
            (std::vector<std::string>{".partial-notes", "partial-step-00000004-xyz789"}));
  EXPECT_EQ(remove_partial_checkpoints(dir.path()), 0);
}

// A damaged LATEST with a complete checkpoint beside it: that one, with a note; never deleted.
TEST(CheckpointTest, DamagedLatestFallsBackToTheNewestCompleteCheckpoint) {
  testing::TempDir dir;
  Training a;
  CheckpointState state = sample_state();
  ASSERT_TRUE(save_checkpoint(dir.path(), state, *a.model, *a.optimizer).is_ok());
  const std::string good = latest_checkpoint(dir.path()).value_or_throw();
  // A crash leftover of a later step without its description: not complete, not chosen.
  fs::create_directory(dir / "step-00000099-crash1");
  std::ofstream(dir / "step-00000099-crash1/.stoker-checkpoint");

  for (const char* latest : {"garbage\n", "step-00000017-gone00\n", "../etc\n"}) {
    ASSERT_TRUE(write_file_atomically(dir / "LATEST", latest).is_ok());
    Result<FoundCheckpoint> found = find_checkpoint(dir.path());
    ASSERT_TRUE(found.is_ok()) << found.status().message();
    EXPECT_EQ(found.value().path, good);
    EXPECT_EQ(found.value().state.step, 17);
    EXPECT_NE(found.value().note.find("LATEST names"), std::string::npos) << found.value().note;
    EXPECT_NE(found.value().note.find("resuming from " + good), std::string::npos);
  }
  fs::remove(dir / "LATEST");
  EXPECT_EQ(find_checkpoint(dir.path()).value().path, good);

  // The only complete checkpoint damaged too: the error says why, and nothing is removed.
  ASSERT_TRUE(write_file_atomically(good + "/meta.json", "{").is_ok());
  ASSERT_TRUE(write_file_atomically(dir / "LATEST", fs::path(good).filename().string()).is_ok());
  Status none = find_checkpoint(dir.path()).status();
  EXPECT_EQ(none.code(), StatusCode::kCorrupt);
  EXPECT_NE(none.message().find(good + "/meta.json"), std::string::npos) << none.message();
  EXPECT_TRUE(fs::exists(good + "/model.pt"));
}

TEST(CheckpointTest, RunIdentitySaysWhatDiffers) {
  const RunIdentity saved = sample_state().run;
  EXPECT_EQ(run_difference(saved, saved), "");
  RunIdentity other = saved;
  other.optimizer = "sgd";
  other.batch_size = 32;
  EXPECT_EQ(run_difference(saved, other),
            "optimizer adam (this run: sgd), global batch size 64 (this run: 32)");
  other = saved;
  other.data = "fedcba9876543210";
  EXPECT_EQ(run_difference(saved, other),
            "other training data (identity 0123456789abcdef, this run's fedcba9876543210)");

  other = saved;
  other.shuffle_window = kShuffleAll;
  EXPECT_EQ(run_difference(saved, other), "--shuffle-window 16 (this run: all)");

  RunIdentity renormalised = saved;
  renormalised.mean = {0.5f, 0.5f};
  EXPECT_EQ(run_difference(saved, renormalised),
            "input normalisation --mean 0.25 0.5 --std 0.125 0.2 (this run: --mean 0.5 0.5 --std "
            "0.125 0.2)");
  RunIdentity unrecorded = saved;  // a checkpoint from before the normalisation was recorded
  unrecorded.mean.clear();
  unrecorded.std.clear();
  EXPECT_EQ(run_difference(unrecorded, renormalised), "");

  FoundCheckpoint found;
  found.path = "/ckpt/step-1";
  found.state = sample_state();
  EXPECT_TRUE(check_same_run(found, saved).is_ok());
  Status refused = check_same_run(found, other);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "checkpoint /ckpt/step-1 belongs to another run: --shuffle-window 16 (this run: all); "
            "resume with the same settings or use another checkpoint directory");
}

TEST(CheckpointTest, DataIdentityFollowsTheShardsChecksums) {
  Manifest m;
  m.schema = Schema::create({{"label", DType::kInt64, {}}}).value_or_throw();
  m.records = 10;
  m.shards = {{"shard-00000.stk", 10, 1000, 0x1234}};
  const std::string id = data_identity(m);
  EXPECT_EQ(id.size(), 16u);
  Manifest copy = m;
  copy.source = "elsewhere";  // informational
  EXPECT_EQ(data_identity(copy), id);
  Manifest changed = m;
  changed.shards[0].index_checksum = 0x1235;
  EXPECT_NE(data_identity(changed), id);
  changed = m;
  changed.schema = Schema::create({{"label", DType::kFloat32, {}}}).value_or_throw();
  EXPECT_NE(data_identity(changed), id);
}

TEST(CheckpointTest, PrepareCreatesTheDirectoryOrSaysWhyNot) {
  testing::TempDir dir;
  ASSERT_TRUE(prepare_checkpoint_dir(dir / "a/b/c").is_ok());
  EXPECT_TRUE(fs::is_directory(dir / "a/b/c"));
  EXPECT_TRUE(fs::is_empty(dir / "a/b/c")) << "the write probe must not stay behind";

  std::ofstream(dir / "file") << "x";
  Status s = prepare_checkpoint_dir(dir / "file/ckpt");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find(dir / "file/ckpt"), std::string::npos) << s.message();
}

TEST(CheckpointTest, AnAugmentWrittenBeforeAParameterExistedIsTheSameSetting) {
  // What this build writes, and what a build before color_jitter's backend and the policies'
  // version and backend wrote: the same calls without them (their defaults give the pixels
  // they gave).
  const std::string now = to_text(augment_op("color_jitter:brightness=0.4").value_or_throw()) +
                          " " + to_text(augment_op("trivial_augment_wide").value_or_throw());
  std::string before = now;
  for (const std::string added : {",backend=tensor", ",version=v1", ",backend=pil"}) {
    const size_t at = before.find(added);
    ASSERT_NE(at, std::string::npos) << now;
    before.erase(at, added.size());
  }
  EXPECT_EQ(settings_difference({{"--augment", before}}, {{"--augment", now}}), "");
  // Another value still differs, shown as this build writes it.
  const std::string other = to_text(augment_op("color_jitter:brightness=0.2").value_or_throw()) +
                            " " + to_text(augment_op("trivial_augment_wide").value_or_throw());
  EXPECT_EQ(settings_difference({{"--augment", before}}, {{"--augment", other}}),
            "--augment " + now + " (this run: " + other + ")");
  // A call this build cannot read differs as it was written.
  EXPECT_EQ(settings_difference({{"--augment", "gone:x=1"}}, {{"--augment", "none"}}),
            "--augment gone:x=1 (this run: none)");
}

}  // namespace
}  // namespace stoker
