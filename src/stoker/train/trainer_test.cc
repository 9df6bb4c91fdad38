// Trainer: learns, reports, resumes exactly (any worker count, mid-epoch, with accumulation and
// a schedule), stops on request, and rejects bad input before training or with a clear error;
// its units: the doctor's steps (StepRunner) are the training loop's, and validate() is where
// TrainerOptions are checked.
#include "stoker/train/trainer.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/utils.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "stoker/testing/classification.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/train/checkpoint.h"
#include "stoker/train/compute_settings.h"
#include "stoker/train/default_generator.h"
#include "stoker/train/normalization_choice.h"
#include "stoker/train/step_runner.h"
#include "stoker/train/training_setup.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

using testing::kRowClasses;
using testing::write_rows_dataset;

// The model's parameters and buffers, copied.
std::vector<at::Tensor> model_state(Model& model) {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : model.named_state()) out.push_back(t.detach().clone());
  return out;
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_compute_settings(1);  // the caller's to choose (the CLI's); one keeps the tests quick
    write_rows_dataset(dir_ / "data/train", 600, 1);
    write_rows_dataset(dir_ / "data/test", 200, 2);
  }

  TrainerOptions options() const {
    TrainerOptions o;
    o.data_dir = dir_ / "data";
    o.epochs = 2;
    o.batch_size = 16;
    o.loader.workers = 0;
    o.seed = 3;
    o.mean = {0.5f};
    o.std = {0.5f};
    return o;
  }

  static std::vector<at::Tensor> parameters(Trainer& trainer) {
    return model_state(trainer.model());
  }

  // options() without evaluation set up (training_setup.h), traced on `tracer`.
  std::unique_ptr<TrainingSetup> traced_setup(Tracer& tracer) const {
    TrainerOptions o = options();
    o.eval = false;
    o.tracer = &tracer;
    return set_up_training(o);
  }

  // The Error message of constructing and running a Trainer, or "" if it succeeds.
  static std::string error_of(const TrainerOptions& o) {
    try {
      Trainer(o).run();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  testing::TempDir dir_;
};

double max_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  }
  return worst;
}

// Makes `o` print progress lines, with a log at `log_path`, into a tmpfile it returns.
std::FILE* print_lines(TrainerOptions& o, const std::string& log_path) {
  o.log_path = log_path;
  o.out = std::tmpfile();
  o.progress = ProgressStyle::kLines;
  return o.out;
}

// What a run printed to `out` (a tmpfile), which it closes.
std::string printed(std::FILE* out) {
  std::fflush(out);
  std::rewind(out);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  return text;
}

// The "run" record a run wrote first into its log.
nlohmann::json run_record(const std::string& log_path) {
  std::ifstream log(log_path);
  std::string line;
  std::getline(log, line);
  return nlohmann::json::parse(line);
}

TEST_F(TrainerTest, OnBatchSeesEachEpochsStartAndEveryBatch) {
  TrainerOptions o = options();
  o.epochs = 2;
  o.eval = false;
  std::vector<int64_t> calls;
  o.on_batch = [&calls](int64_t done) { calls.push_back(done); };
  Trainer trainer(o);
  EXPECT_EQ(trainer.batches_per_epoch(), 38);  // ceil(600 / 16)
  trainer.run();
  std::vector<int64_t> expected;
  for (int e = 0; e < 2; ++e) {
    for (int64_t b = 0; b <= 38; ++b) expected.push_back(b);
  }
  EXPECT_EQ(calls, expected);
}

TEST_F(TrainerTest, LearnsAndReportsEveryEpoch) {
  TrainerOptions o = options();
  o.epochs = 3;
  o.loader.workers = 1;
  std::FILE* out = print_lines(o, dir_ / "log.jsonl");
  Trainer trainer(o);
  EXPECT_EQ(trainer.spec().num_classes, kRowClasses);  // no class names: largest label + 1
  EXPECT_EQ(trainer.spec().height, 4);
  const TrainResult result = trainer.run();

  EXPECT_EQ(result.reason, StopReason::kCompleted);
  ASSERT_EQ(result.epochs.size(), 3u);
  EXPECT_EQ(result.steps, 3 * 38);  // ceil(600 / 16) batches per epoch
  for (const EpochMetrics& m : result.epochs) {
    EXPECT_EQ(m.samples, 600);
    EXPECT_NEAR(m.data_seconds + m.h2d_seconds + m.compute_seconds, m.seconds, 1e-9);
    EXPECT_GT(m.compute_seconds, 0);
    ASSERT_TRUE(m.test_accuracy.has_value());
  }
  EXPECT_LT(result.epochs.back().train_loss, result.epochs.front().train_loss);
  EXPECT_GT(*result.epochs.back().test_accuracy, 0.95);

  std::ifstream log(o.log_path);
  std::string line;
  int64_t epoch = 0;
  ASSERT_TRUE(std::getline(log, line));
  EXPECT_EQ(nlohmann::json::parse(line)["record"], "run");  // first, before the epochs
  while (std::getline(log, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["record"], "epoch");
    EXPECT_EQ(j["epoch"], ++epoch);
    EXPECT_DOUBLE_EQ(j["test_accuracy"].get<double>(), *result.epochs[epoch - 1].test_accuracy);
  }
  EXPECT_EQ(epoch, 3);

  const std::string text = printed(out);
  EXPECT_NE(text.find("training mlp on " + o.data_dir +
                      "/train (600 samples, 4 classes; mean 0.5000 std 0.5000 from --mean/--std)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("epoch 3/3  train loss "), std::string::npos) << text;
  EXPECT_NE(text.find("test acc "), std::string::npos) << text;
  EXPECT_NE(text.find("trained mlp: 3 epochs, 114 steps"), std::string::npos) << text;
}

// One epoch + resume + one epoch gives the parameters of two epochs straight, whatever the
// worker counts, also when stopped inside an epoch and inside an accumulation schedule.
struct ResumeCase {
  int64_t stop_after_steps;
  int64_t accum;
  int workers_before;
  int workers_after;
  AmpMode amp;
};

class TrainerResumeTest : public TrainerTest, public ::testing::WithParamInterface<ResumeCase> {};

TEST_P(TrainerResumeTest, ResumeContinuesExactly) {
  const ResumeCase c = GetParam();
  TrainerOptions o = options();
  o.accum = c.accum;
  o.amp = c.amp;
  o.schedule.kind = ScheduleKind::kCosine;
  o.schedule.warmup_steps = 5;

  o.checkpoint_dir = dir_ / "straight";
  Trainer straight(o);
  const TrainResult full = straight.run();
  ASSERT_EQ(full.epochs.size(), 2u);
  const std::vector<at::Tensor> expected = parameters(straight);

  o.checkpoint_dir = dir_ / "resumed";
  o.loader.workers = c.workers_before;
  o.max_steps = c.stop_after_steps;
  {
    Trainer first(o);
    const TrainResult part = first.run();
    EXPECT_EQ(part.reason, StopReason::kStepLimit);
    EXPECT_EQ(part.steps, c.stop_after_steps);
    EXPECT_FALSE(part.checkpoint.empty());
  }
  o.loader.workers = c.workers_after;
  o.max_steps = 0;
  o.resume = true;
  Trainer second(o);
  const TrainResult rest = second.run();
  EXPECT_EQ(rest.reason, StopReason::kCompleted);
  EXPECT_EQ(rest.steps, full.steps);
  EXPECT_LE(max_difference(parameters(second), expected), 1e-6);
  // The resumed epoch's mean loss includes the samples trained before the interruption.
  ASSERT_FALSE(rest.epochs.empty());
  EXPECT_NEAR(rest.epochs.back().train_loss, full.epochs.back().train_loss, 1e-9);
  EXPECT_EQ(*rest.epochs.back().test_accuracy, *full.epochs.back().test_accuracy);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TrainerResumeTest,
    ::testing::Values(ResumeCase{38, 1, 0, 2, AmpMode::kOff},    // at the epoch boundary
                      ResumeCase{38, 1, 2, 0, AmpMode::kOff},    // same, other worker counts
                      ResumeCase{7, 3, 2, 0, AmpMode::kOff},     // inside epoch 1, accumulating
                      ResumeCase{25, 2, 0, 1, AmpMode::kBf16}),  // inside epoch 2, bf16 autocast
    [](const ::testing::TestParamInfo<ResumeCase>& info) {
      const ResumeCase& c = info.param;
      return "Stop" + std::to_string(c.stop_after_steps) + "Accum" + std::to_string(c.accum) +
             "Workers" + std::to_string(c.workers_before) + "To" + std::to_string(c.workers_after) +
             (c.amp == AmpMode::kBf16 ? "Bf16" : "");
    });

TEST_F(TrainerTest, Bf16AutocastTrainsInLowerPrecision) {
  TrainerOptions o = options();
  o.epochs = 1;
  Trainer fp32(o);
  const TrainResult full = fp32.run();
  o.amp = AmpMode::kBf16;
  Trainer bf16(o);
  const TrainResult low = bf16.run();
  const double difference = max_difference(parameters(bf16), parameters(fp32));
  EXPECT_GT(difference, 1e-4) << "autocast changed nothing";
  EXPECT_LT(difference, 0.1);
  EXPECT_NEAR(*low.epochs[0].test_accuracy, *full.epochs[0].test_accuracy, 0.05);
}

// CUDA tests (skipped without a CUDA device; run on a GPU machine by scripts/gpu/run.sh tests).
// A run on the device trains like the same run on the CPU, with cuDNN's benchmark mode on (its
// input shape is fixed), and each epoch reports the device memory it peaked at; on the CPU, none.
TEST_F(TrainerTest, OnACudaDeviceTheRunMatchesTheCpuAndReportsItsPeakDeviceMemory) {
  TrainerOptions o = options();
  o.device = "cpu";
  const TrainResult cpu = Trainer(o).run();
  ASSERT_EQ(cpu.epochs.size(), 2u);
  EXPECT_FALSE(cpu.epochs[0].device_peak_bytes);
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";

  o.device = "cuda";
  Trainer trainer(o);
  const TrainResult cuda = trainer.run();
  ASSERT_EQ(cuda.epochs.size(), 2u);
  int64_t parameter_bytes = 0;
  for (const at::Tensor& p : trainer.model().parameters())
    parameter_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  for (size_t e = 0; e < 2; ++e) {
    ASSERT_TRUE(cuda.epochs[e].device_peak_bytes) << "epoch " << e + 1;
    EXPECT_GE(*cuda.epochs[e].device_peak_bytes, parameter_bytes);  // they lay there at least
    EXPECT_NEAR(cuda.epochs[e].train_loss, cpu.epochs[e].train_loss, 1e-3);
  }
  EXPECT_NEAR(*cuda.epochs[1].test_accuracy, *cpu.epochs[1].test_accuracy, 0.02);
}

// fp16 autocast with the loss scaler on the device: it learns, and a checkpoint keeps the
// scaler's state (a resumed run continues the straight run's losses).
TEST_F(TrainerTest, OnACudaDeviceFp16TrainsWithTheLossScalerAndResumes) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  TrainerOptions o = options();
  o.device = "cuda";
  o.amp = AmpMode::kFp16;
  o.schedule.kind = ScheduleKind::kConstant;  // the same lr whatever the run's length
  o.epochs = 3;
  const TrainResult straight = Trainer(o).run();
  ASSERT_EQ(straight.epochs.size(), 3u);
  for (const EpochMetrics& m : straight.epochs) EXPECT_TRUE(std::isfinite(m.train_loss));
  EXPECT_LT(straight.epochs[2].train_loss, straight.epochs[0].train_loss);

  o.checkpoint_dir = dir_ / "fp16-checkpoints";
  o.epochs = 2;
  Trainer(o).run();
  o.epochs = 3;
  o.resume = true;
  const TrainResult resumed = Trainer(o).run();
  ASSERT_EQ(resumed.epochs.size(), 1u);
  EXPECT_NEAR(resumed.epochs[0].train_loss, straight.epochs[2].train_loss, 1e-4);
}

TEST_F(TrainerTest, StopRequestCheckpointsAtTheNextStepBoundary) {
  TrainerOptions o = options();
  o.accum = 2;
  o.checkpoint_dir = dir_ / "ckpt";
  std::atomic<bool> stop{true};
  o.stop = &stop;
  Trainer trainer(o);
  const TrainResult result = trainer.run();
  EXPECT_EQ(result.reason, StopReason::kStopRequested);
  EXPECT_EQ(result.steps, 1);  // two batches: one full accumulation window
  EXPECT_EQ(result.epoch, 1);
  EXPECT_TRUE(result.epochs.empty());
  EXPECT_EQ(result.checkpoint, latest_checkpoint(o.checkpoint_dir).value_or_throw());
  const std::string meta = read_file(result.checkpoint + "/meta.json").value_or_throw();
  EXPECT_EQ(nlohmann::json::parse(meta)["loader"]["position"], 32);

  stop = false;
  o.resume = true;
  const TrainResult rest = Trainer(o).run();
  EXPECT_EQ(rest.reason, StopReason::kCompleted);
  EXPECT_EQ(rest.steps, 2 * 19);
}

TEST_F(TrainerTest, ResumeOfAFinishedRunTrainsNothing) {
  TrainerOptions o = options();
  o.epochs = 1;
  o.checkpoint_dir = dir_ / "ckpt";
  Trainer(o).run();
  o.resume = true;
  Trainer again(o);
  const std::vector<at::Tensor> before = parameters(again);
  const TrainResult result = again.run();
  EXPECT_TRUE(result.epochs.empty());
  EXPECT_EQ(result.steps, 38);
  EXPECT_EQ(max_difference(parameters(again), before), 0);
}

// The default cosine schedule spans the run: resuming into a run of another length says so;
// a step schedule, whose shape does not depend on the length, says nothing.
TEST_F(TrainerTest, ResumeIntoALongerRunNotesTheScheduleChange) {
  auto resume_output = [&](int64_t first_epochs, int64_t epochs,
                           ScheduleKind kind = ScheduleKind::kCosine) {
    const std::string ckpt =
        dir_ / ("ckpt-" + std::to_string(first_epochs) + "-" + std::to_string(epochs) + "-" +
                std::to_string(static_cast<int>(kind)));
    TrainerOptions o = options();
    o.schedule.kind = kind;
    o.epochs = first_epochs;
    o.checkpoint_dir = ckpt;
    Trainer(o).run();
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::tmpfile(), &std::fclose);
    o.epochs = epochs;
    o.resume = true;
    o.out = out.get();
    Trainer(o).run();
    std::fflush(out.get());
    std::rewind(out.get());
    std::string text;
    for (int c; (c = std::fgetc(out.get())) != EOF;) text += static_cast<char>(c);
    return text;
  };
  const std::string longer = resume_output(1, 2);
  EXPECT_NE(longer.find("resuming from"), std::string::npos) << longer;
  EXPECT_NE(longer.find("run was 38 optimizer steps long and this one is 76"), std::string::npos)
      << longer;
  const std::string same = resume_output(2, 2);
  EXPECT_EQ(same.find("note:"), std::string::npos) << same;
  const std::string step = resume_output(1, 2, ScheduleKind::kStep);  // length-independent
  EXPECT_NE(step.find("resuming from"), std::string::npos) << step;
  EXPECT_EQ(step.find("note:"), std::string::npos) << step;
}

TEST_F(TrainerTest, BadModelsAreRejectedBeforeTraining) {
  TrainerOptions o = options();
  o.model = "transformer";
  EXPECT_NE(error_of(o).find("unknown model 'transformer'"), std::string::npos);

  o.model = dir_ / "junk.pt";
  std::ofstream(o.model) << "not TorchScript";
  EXPECT_NE(error_of(o).find("cannot load TorchScript model"), std::string::npos);

  torch::jit::Module three("ThreeOutputs");
  three.define(R"(
    def forward(self, x):
        return x.flatten(1)[:, :3]
  )");
  o.model = dir_ / "three.pt";
  three.save(o.model);
  const std::string shape = error_of(o);
  EXPECT_NE(shape.find("to output [2, 3], expected [2, 4]"), std::string::npos) << shape;

  o.model = "mlp";
  o.amp = AmpMode::kFp16;
  EXPECT_NE(error_of(o).find("fp16 needs a CUDA device"), std::string::npos);
}

TEST_F(TrainerTest, MissingDataIsNamed) {
  TrainerOptions o = options();
  o.data_dir = dir_ / "nowhere";
  EXPECT_EQ(error_of(o), o.data_dir + ": no such dataset directory");
  write_rows_dataset(dir_ / "half/test", 100, 1);
  o.data_dir = dir_ / "half";
  EXPECT_NE(error_of(o).find(dir_ / "half holds no train/ dataset (it holds test/ of "),
            std::string::npos)
      << error_of(o);
  write_rows_dataset(dir_ / "half/train", 100, 1);
  fs::remove_all(dir_ / "half/test");
  EXPECT_EQ(error_of(o), "");  // trained, not evaluated: test/ is only needed for evaluation
}

TEST_F(TrainerTest, LabelsOutsideTheClassesNameTheRecord) {
  TrainerOptions o = options();
  o.data_dir = dir_ / "named";
  // Three class names, but record 123 of test/ says 3.
  write_rows_dataset(dir_ / "named/train", 200, 1, {"a", "b", "c"},
                     [](int64_t i) { return i % 3; });
  write_rows_dataset(dir_ / "named/test", 200, 2, {"a", "b", "c"},
                     [](int64_t i) { return i == 123 ? 3 : i % 3; });
  const std::string message = error_of(o);
  EXPECT_NE(message.find(dir_ / "named/test" + ": record 123 has label 3, outside the model's 3 "
                                               "classes [0, 3)"),
            std::string::npos)
      << message;

  o.data_dir = dir_ / "negative";
  write_rows_dataset(dir_ / "negative/train", 200, 1, {},
                     [](int64_t i) { return i == 7 ? -1 : 1; });
  write_rows_dataset(dir_ / "negative/test", 10, 2);
  EXPECT_NE(error_of(o).find("record 7 has label -1"), std::string::npos);
}

TEST_F(TrainerTest, CorruptRecordStopsTrainingNamingIt) {
  auto [shard, offset] = testing::record_location(dir_ / "data/train", 321);
  testing::flip_byte(shard, offset + 3);
  const std::string message = error_of(options());
  EXPECT_NE(message.find("record 321"), std::string::npos) << message;
  // Byte 3 is in the image: with checksums off the run trains on the damaged pixel.
  TrainerOptions unchecked = options();
  unchecked.loader.verify = VerifyPolicy::kOff;
  EXPECT_EQ(error_of(unchecked), "");
}

TEST_F(TrainerTest, NonFiniteLossStopsNamingTheStep) {
  TrainerOptions o = options();
  o.optimizer.name = "sgd";
  o.optimizer.lr = 1e10;
  const std::string message = error_of(o);
  EXPECT_NE(message.find("training stopped: loss is "), std::string::npos) << message;
  EXPECT_NE(message.find("at epoch 1, batch "), std::string::npos) << message;
  EXPECT_NE(message.find(", step "), std::string::npos) << message;
}

TEST_F(TrainerTest, CheckpointDirectoryProblemsComeBeforeTraining) {
  TrainerOptions o = options();
  std::ofstream(dir_ / "file") << "x";
  o.checkpoint_dir = dir_ / "file/ckpt";
  o.log_path = dir_ / "log.jsonl";
  EXPECT_NE(error_of(o).find("cannot create checkpoint directory '" + o.checkpoint_dir + "'"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(o.log_path)) << "nothing may happen before the checks";

  o.checkpoint_dir = dir_ / "ckpt";
  o.log_path.clear();
  o.epochs = 1;
  Trainer(o).run();
  EXPECT_NE(error_of(o).find("already holds a checkpoint"), std::string::npos);
}

TEST_F(TrainerTest, FailedRunKeepsTheGoodCheckpoint) {
  TrainerOptions o = options();
  o.checkpoint_dir = dir_ / "ckpt";
  o.optimizer.name = "sgd";
  o.optimizer.lr = 0.1;
  o.max_steps = 38;
  Trainer(o).run();
  const std::string good = latest_checkpoint(o.checkpoint_dir).value_or_throw();
  const std::string meta = read_file(good + "/meta.json").value_or_throw();
  const std::string model = read_file(good + "/model.pt").value_or_throw();

  // The resumed run diverges in epoch 2 and fails; another lr needs override_settings.
  o.max_steps = 0;
  o.resume = true;
  o.optimizer.lr = 1e10;
  EXPECT_NE(error_of(o).find(" was written with other settings: --lr 0.1 (this run: 1"),
            std::string::npos);
  o.override_settings = true;
  EXPECT_NE(error_of(o).find("training stopped: loss is "), std::string::npos);
  EXPECT_EQ(latest_checkpoint(o.checkpoint_dir).value_or_throw(), good);
  EXPECT_EQ(read_file(good + "/meta.json").value_or_throw(), meta);
  EXPECT_EQ(read_file(good + "/model.pt").value_or_throw(), model);
}

TEST_F(TrainerTest, NormalisesTrainingAndEvaluationWithTheTrainingDatasStatistics) {
  const FieldStatistics stats =
      Manifest::load(dir_ / "data/train").value_or_throw().statistics.at("image");
  TrainerOptions o = options();
  o.mean.clear();
  o.std.clear();
  o.epochs = 1;
  std::FILE* out = print_lines(o, dir_ / "log.jsonl");
  Trainer trainer(o);
  const TrainResult result = trainer.run();
  const nlohmann::json run = run_record(o.log_path);
  EXPECT_EQ(run["config"]["mean"], std::vector<float>{static_cast<float>(stats.mean[0])});
  EXPECT_EQ(run["config"]["std"], std::vector<float>{static_cast<float>(stats.std[0])});
  EXPECT_EQ(run["config"]["mean_from"], "data");
  EXPECT_EQ(run["config"]["std_from"], "data");
  const std::string text = printed(out);
  EXPECT_NE(text.find(fmt::format("(600 samples, 4 classes; mean {:.4f} std {:.4f} from the data's "
                                  "manifest)",
                                  stats.mean[0], stats.std[0])),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("warning"), std::string::npos) << text;

  // They are what the input is normalised with: giving the same values trains the same model,
  // on the same evaluation results; other values train another.
  TrainerOptions given = o;
  given.log_path.clear();
  given.out = nullptr;
  given.mean = run["config"]["mean"].get<std::vector<float>>();
  given.std = run["config"]["std"].get<std::vector<float>>();
  Trainer same(given);
  const TrainResult same_result = same.run();
  EXPECT_EQ(max_difference(parameters(same), parameters(trainer)), 0.0);
  EXPECT_EQ(same_result.epochs[0].test_loss, result.epochs[0].test_loss);
  given.mean = {0.5f};
  Trainer other(given);
  other.run();
  EXPECT_GT(max_difference(parameters(other), parameters(trainer)), 0.0);
}

TEST_F(TrainerTest, DataWithoutStatisticsGetsFashionMnistsWithAWarning) {
  Manifest old = Manifest::load(dir_ / "data/train").value_or_throw();
  old.statistics.clear();  // as an older stoker wrote it
  throw_if_error(old.save(dir_ / "data/train"));
  TrainerOptions o = options();
  o.mean.clear();
  o.std = {0.25f};
  o.max_steps = 1;
  std::FILE* out = print_lines(o, dir_ / "log.jsonl");
  Trainer(o).run();
  const std::string text = printed(out);
  EXPECT_NE(text.find("warning: " + o.data_dir +
                      "/train has no normalisation statistics in its manifest (converted by an "
                      "older stoker, or its images are constant): normalising with "
                      "Fashion-MNIST's mean; convert it again with this stoker to compute them, "
                      "or pass --mean/--std\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("mean 0.2860 from Fashion-MNIST's defaults, std 0.2500 from --std"),
            std::string::npos)
      << text;
  const nlohmann::json run = run_record(o.log_path);
  EXPECT_EQ(run["config"]["mean"], kFashionMnistMean);
  EXPECT_EQ(run["config"]["mean_from"], "default");
  EXPECT_EQ(run["config"]["std"], std::vector<float>{0.25f});
  EXPECT_EQ(run["config"]["std_from"], "option");
}

// The library leaves the process as it found it: thread count, LibTorch's default generator,
// stdout; and it writes no default data.
TEST_F(TrainerTest, LeavesTheProcessesStateAsItWas) {
  set_compute_settings(2);  // not what the cores left by one worker would give on 2 cores
  torch::manual_seed(77);
  at::randn({5});  // somewhere in the stream, not at a seed's start
  const at::Tensor generator_before = default_generator_state();
  TrainerOptions o = options();
  o.loader.workers = 1;
  o.max_steps = 1;
  o.out = TrainerOptions().out;  // the default
  ::testing::internal::CaptureStdout();
  const TrainResult result = Trainer(o).run();
  std::fflush(stdout);
  const std::string printed_to_stdout = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(result.steps, 1);
  EXPECT_EQ(at::get_num_threads(), 2);
  EXPECT_TRUE(default_generator_state().equal(generator_before));
  EXPECT_EQ(printed_to_stdout, "");
}

// Two Trainers with the same seed start from the same weights whatever the default generator
// held before; another seed starts elsewhere.
TEST_F(TrainerTest, ModelInitialisationIsAFunctionOfTheSeed) {
  auto initial = [this](uint64_t global_seed, uint64_t seed) {
    torch::manual_seed(global_seed);
    TrainerOptions o = options();
    o.seed = seed;
    Trainer trainer(o);
    return parameters(trainer);
  };
  const std::vector<at::Tensor> first = initial(1, 3);
  EXPECT_EQ(max_difference(first, initial(2, 3)), 0);
  EXPECT_GT(max_difference(first, initial(1, 4)), 0);
}

TEST_F(TrainerTest, UnconvertedDefaultDataIsAnErrorNotAConversion) {
  const fs::path root = dir_ / "data-root";
  const char* previous = std::getenv("STOKER_DATA");
  const std::string saved = previous ? previous : "";
  ::setenv("STOKER_DATA", root.c_str(), 1);
  TrainerOptions o = options();
  o.data_dir = "";
  const std::string error = error_of(o);
  if (previous) {
    ::setenv("STOKER_DATA", saved.c_str(), 1);
  } else {
    ::unsetenv("STOKER_DATA");
  }
  EXPECT_NE(error.find(root.string() + "/fashion-mnist is not converted"), std::string::npos)
      << error;
  EXPECT_NE(error.find("stoker convert fashion-mnist"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(root)) << "nothing written";
}

TEST_F(TrainerTest, InvalidOptionsAreRejected) {
  auto with = [&](auto change) {
    TrainerOptions o = options();
    change(o);
    return error_of(o);
  };
  EXPECT_NE(with([](TrainerOptions& o) { o.epochs = 0; }).find("epochs"), std::string::npos);
  EXPECT_NE(with([](TrainerOptions& o) { o.accum = 0; }).find("accum"), std::string::npos);
  EXPECT_NE(with([](TrainerOptions& o) { o.clip_grad = -1; }).find("clip-grad"), std::string::npos);
  EXPECT_NE(with([](TrainerOptions& o) { o.resume = true; }).find("checkpoint directory"),
            std::string::npos);
  EXPECT_NE(with([](TrainerOptions& o) { o.optimizer.name = "lbfgs"; }).find("lbfgs"),
            std::string::npos);
}

// Spans of category "train" recorded by `tracer`, by name.
std::map<std::string, int> train_spans(const Tracer& tracer) {
  std::map<std::string, int> counts;
  for (const ThreadTrace& thread : tracer.snapshot()) {
    for (const TraceEvent& e : thread.events) {
      if (std::string(e.category) == "train") ++counts[e.name];
    }
  }
  return counts;
}

// The doctor's steps (StepRunner) are the training loop's: train_step trains exactly as the
// Trainer does (across an epoch's end), data_step takes batches without the model,
// resident_step never takes a second batch.
TEST_F(TrainerTest, TrainStepsTrainAsTheTrainerDoes) {
  for (const int64_t accum : {1, 3}) {
    TrainerOptions o = options();
    o.eval = false;
    o.accum = accum;
    o.max_steps = 45 / accum;  // past the first epoch's end
    Trainer trainer(o);
    trainer.run();

    const std::unique_ptr<TrainingSetup> setup = set_up_training(o);
    StepRunner steps(*setup);
    while (steps.step() < o.max_steps) steps.train_step();
    EXPECT_EQ(steps.epoch(), 1) << "accum " << accum;

    const std::vector<at::Tensor> a = parameters(trainer);
    const std::vector<at::Tensor> b = model_state(*setup->model);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << "accum " << accum;
  }
}

// The reference's --mixup-alpha, --cutmix-alpha and --random-erase: the training loader
// normalises, erases and mixes, its labels soft targets over the classes; the steps take them
// (a soft-target cross-entropy) and the run learns. Evaluation batches stay uint8 and labels.
TEST_F(TrainerTest, MixingTrainsOnTheLoadersSoftTargets) {
  TrainerOptions o = options();
  o.mixup_alpha = 0.2;
  o.cutmix_alpha = 1.0;
  o.random_erase = 0.25;
  o.label_smoothing = 0.1;
  const std::unique_ptr<TrainingSetup> setup = set_up_training(o);
  for (Batch& batch : setup->loader->epoch(0)) {
    EXPECT_EQ(batch["image"].scalar_type(), at::kFloat);
    const at::Tensor& target = batch["label"];
    ASSERT_EQ(target.scalar_type(), at::kFloat);
    EXPECT_EQ(target.sizes(), (std::vector<int64_t>{batch.size(), kRowClasses}));
    EXPECT_TRUE(target.sum(1).allclose(at::ones({batch.size()})));
    EXPECT_GT(target.gt(0).sum().item<int64_t>(), batch.size());  // mixed rows
    break;
  }
  for (Batch& batch : setup->test_loader->epoch(0)) {
    EXPECT_EQ(batch["image"].scalar_type(), at::kByte);
    EXPECT_EQ(batch["label"].scalar_type(), at::kLong);
    break;
  }
  Trainer trainer(o);
  const TrainResult result = trainer.run();
  EXPECT_TRUE(std::isfinite(result.epochs.back().train_loss));
  ASSERT_TRUE(result.epochs.back().test_accuracy.has_value());
  EXPECT_GT(*result.epochs.back().test_accuracy, 0.5);
}

TEST_F(TrainerTest, DataStepsTakeBatchesWithoutTheModel) {
  Tracer tracer;
  const std::unique_ptr<TrainingSetup> setup = traced_setup(tracer);
  const std::vector<at::Tensor> before = model_state(*setup->model);
  StepRunner steps(*setup);
  for (int i = 0; i < 40; ++i) steps.data_step();  // into the second epoch
  EXPECT_EQ(steps.epoch(), 1);
  EXPECT_EQ(steps.step(), 0);
  const std::vector<at::Tensor> after = model_state(*setup->model);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i].equal(after[i]));
  const std::map<std::string, int> spans = train_spans(tracer);
  EXPECT_EQ(spans.at("h2d"), 40);
  EXPECT_EQ(spans.at("data"), 40 + 2);  // one a step, and each of the 2 epochs its first
  EXPECT_EQ(spans.count("forward"), 0u);
  EXPECT_EQ(spans.count("optimizer"), 0u);
}

TEST_F(TrainerTest, ResidentStepsNeverTakeASecondBatch) {
  Tracer tracer;
  const std::unique_ptr<TrainingSetup> setup = traced_setup(tracer);
  StepRunner steps(*setup);
  for (int i = 0; i < 50; ++i) steps.resident_step();  // more than an epoch's batches
  EXPECT_EQ(steps.step(), 50);
  const std::map<std::string, int> spans = train_spans(tracer);
  EXPECT_EQ(spans.at("data"), 1);
  EXPECT_EQ(spans.at("forward"), 50);
  EXPECT_EQ(spans.at("backward"), 50);
  EXPECT_EQ(spans.at("optimizer"), 50);
}

TEST(ValidateTest, NamesTheFirstOptionOutOfRange) {
  EXPECT_TRUE(validate(TrainerOptions()).is_ok());
  auto error = [](auto change) {
    TrainerOptions o;
    change(o);
    const Status status = validate(o);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    return status.message();
  };
  EXPECT_EQ(error([](TrainerOptions& o) { o.epochs = 0; }), "epochs must be >= 1");
  EXPECT_EQ(error([](TrainerOptions& o) { o.accum = 0; }), "accum must be >= 1");
  EXPECT_EQ(error([](TrainerOptions& o) { o.clip_grad = std::nan(""); }),
            "clip-grad must be >= 0 (0 = off)");
  EXPECT_EQ(error([](TrainerOptions& o) { o.label_smoothing = std::nan(""); }),
            "label smoothing must be in [0, 1]");
  EXPECT_EQ(error([](TrainerOptions& o) { o.max_steps = -1; }),
            "max steps must be >= 0 (0 = no limit)");
  EXPECT_EQ(error([](TrainerOptions& o) { o.sample_cost = std::chrono::microseconds(-1); }),
            "sample cost must be >= 0 (0 = none)");
  EXPECT_EQ(error([](TrainerOptions& o) { o.resume = true; }),
            "resume needs a checkpoint directory");
  EXPECT_EQ(error([](TrainerOptions& o) { o.image_size = 0; }), "image size must be >= 1");
  EXPECT_EQ(error([](TrainerOptions& o) { o.mixup_alpha = -0.5; }),
            "mixup alpha must be >= 0 (0 = off)");
  EXPECT_EQ(error([](TrainerOptions& o) { o.cutmix_alpha = INFINITY; }),
            "cutmix alpha must be >= 0 (0 = off)");
  EXPECT_EQ(error([](TrainerOptions& o) { o.random_erase = 1.5; }),
            "random erase must be in [0, 1] (0 = off)");
}

}  // namespace
}  // namespace stoker
