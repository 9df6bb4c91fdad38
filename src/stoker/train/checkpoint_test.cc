#include "stoker/train/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <filesystem>
#include <fstream>

#include "stoker/testing/temp_dir.h"
#include "stoker/train/optimizers.h"
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
  state.model = "mlp";
  state.step = 17;
  state.loader = {7, 2, 640};
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
  EXPECT_EQ(s.model, expected.model);
  EXPECT_EQ(s.step, expected.step);
  EXPECT_EQ(s.loader.seed, expected.loader.seed);
  EXPECT_EQ(s.loader.epoch, expected.loader.epoch);
  EXPECT_EQ(s.loader.position, expected.loader.position);
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

  // A crash in the middle of writing leaves a partial directory that nothing points to.
  fs::create_directory(dir / "step-00000018-crash1");
  std::ofstream(dir / "step-00000018-crash1/model.pt") << "half";
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
  Status save(const std::string& path) override { return io_error(path + ": disk full"); }
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
  ASSERT_TRUE(write_file_atomically(sub + "/meta.json", "{\"format_version\": 1}").is_ok());
  Status bad_meta = load_checkpoint(dir.path(), *a.model, *a.optimizer).status();
  EXPECT_EQ(bad_meta.code(), StatusCode::kCorrupt);
  EXPECT_NE(bad_meta.message().find(sub + "/meta.json"), std::string::npos) << bad_meta.message();

  ASSERT_TRUE(write_file_atomically(dir / "LATEST", "step-missing\n").is_ok());
  Status dangling = latest_checkpoint(dir.path()).status();
  EXPECT_EQ(dangling.code(), StatusCode::kCorrupt);
  EXPECT_NE(dangling.message().find("step-missing"), std::string::npos) << dangling.message();
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

}  // namespace
}  // namespace stoker
