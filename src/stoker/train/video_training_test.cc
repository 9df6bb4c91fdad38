// Training on videos: a run's clips are those its options ask for (--frames frames
// --frame-step apart, --clips-per-video of each video an epoch, each a sample of its video's
// label), the same for any worker count; they reach the device as uint8 and are normalised there
// as the loader would; a saved video model runs in Python as in the trainer. Skipped in a build
// without video (STOKER_TEST_VIDEO).
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "stoker/pipeline/field_pipeline.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/video_set.h"
#include "stoker/train/compute_settings.h"
#include "stoker/train/step_runner.h"
#include "stoker/train/trainer.h"
#include "stoker/train/training_setup.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The frame counts of the test folder's classes: long's videos have 75 frames, short's 50.
constexpr int64_t kFrameCounts[] = {75, 50};

class VideoTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!STOKER_TEST_VIDEO) GTEST_SKIP() << "built without video";
    set_compute_settings(1);
    const std::string root = data_dir();
    for (const auto& [name, file] : std::vector<std::pair<std::string, std::string>>{
             {"long/a.mp4", "h264_gop12_bframes.mp4"},
             {"long/b.mp4", "h264_gop12_no_bframes.mp4"},
             {"short/c.mp4", "h264_gop1.mp4"},
             {"short/d.mp4", "hevc_gop12_bframes.mp4"}}) {
      fs::create_directories(fs::path(root + "/" + name).parent_path());
      throw_if_error(write_file_atomically(root + "/" + name, video::testing::video_bytes(file)));
    }
  }
  std::string data_dir() const { return dir_.path() + "/videos"; }

  // 4 frames 5 apart, 3 clips per video, 32 px, batches of 2 videos, without evaluation.
  TrainerOptions options(int workers) const {
    TrainerOptions o;
    o.data_dir = data_dir();
    o.data_access.cache_dir = dir_.path() + "/cache";
    o.model = "video_cnn";
    o.frames = 4;
    o.frame_step = 5;
    o.clips_per_video = 3;
    o.image_size = 32;
    o.batch_size = 2;
    o.eval = false;
    o.seed = 7;
    o.loader.workers = workers;
    return o;
  }

  testing::TempDir dir_;
};

// One epoch's model inputs, targets and frame indices, batch after batch.
struct Epoch {
  std::vector<at::Tensor> inputs, targets, frames, labels;
};

Epoch first_epoch(const TrainerOptions& o) {
  std::unique_ptr<TrainingSetup> setup = set_up_training(o);
  StepRunner steps(*setup);
  Epoch out;
  steps.start_epoch(0);
  for (steps.take_first(); steps.has_batch(); steps.next_batch()) {
    const Batch& batch = steps.batch();
    auto [input, target] = steps.on_device(batch, *setup->train_data);
    out.inputs.push_back(input.clone());
    out.targets.push_back(target.clone());
    out.frames.push_back(batch[kFrameIndicesField].clone());
    out.labels.push_back(batch["label"].clone());
  }
  return out;
}

TEST_F(VideoTrainingTest, AnEpochHoldsClipsPerVideoClipsOfFramesStepApartForAnyWorkerCount) {
  const Epoch epoch = first_epoch(options(0));
  int64_t clips = 0;
  bool starts_differ = false;  // some video's clips start at different frames
  for (size_t b = 0; b < epoch.inputs.size(); ++b) {
    const at::Tensor& frames = epoch.frames[b];  // [B, 3, 4]
    ASSERT_EQ(frames.dim(), 3);
    ASSERT_EQ(frames.size(1), 3);
    ASSERT_EQ(frames.size(2), 4);
    const int64_t videos = frames.size(0);
    EXPECT_EQ(epoch.inputs[b].sizes(), (std::vector<int64_t>{videos * 3, 3, 4, 32, 32}));
    clips += epoch.inputs[b].size(0);
    for (int64_t v = 0; v < videos; ++v) {
      const int64_t label = epoch.labels[b][v].item<int64_t>();
      const int64_t count = kFrameCounts[label];
      for (int64_t k = 0; k < 3; ++k) {
        // Each clip a sample of its video's label.
        EXPECT_EQ(epoch.targets[b][v * 3 + k].item<int64_t>(), label);
        const int64_t start = frames[v][k][0].item<int64_t>();
        EXPECT_GE(start, 0);
        EXPECT_LE(start + 3 * 5, count - 1) << "clip past the end of a video of " << count;
        for (int64_t t = 0; t < 4; ++t) EXPECT_EQ(frames[v][k][t].item<int64_t>(), start + 5 * t);
        starts_differ |= start != frames[v][0][0].item<int64_t>();
      }
    }
  }
  EXPECT_EQ(clips, 3 * 4);  // clips_per_video x videos
  EXPECT_TRUE(starts_differ);

  // The same clips, frame for frame and pixel for pixel, from 3 workers.
  const Epoch threaded = first_epoch(options(3));
  ASSERT_EQ(threaded.inputs.size(), epoch.inputs.size());
  for (size_t b = 0; b < epoch.inputs.size(); ++b) {
    EXPECT_TRUE(threaded.frames[b].equal(epoch.frames[b])) << "batch " << b;
    EXPECT_TRUE(threaded.inputs[b].equal(epoch.inputs[b])) << "batch " << b;
    EXPECT_TRUE(threaded.targets[b].equal(epoch.targets[b])) << "batch " << b;
  }
}

// The clips cross to the device as uint8 and are normalised there: the same numbers as the
// loader's float clips (decode_clip's dtype float32, the old way) on the same draws, to
// float32 rounding.
TEST_F(VideoTrainingTest, ClipsNormalisedOnTheDeviceAreTheLoadersFloatClips) {
  const std::unique_ptr<TrainingSetup> setup = set_up_training(options(0));
  const auto reals = [](const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
  };
  const NormalizationChoice& n = setup->normalization;
  ASSERT_EQ(n.mean.size(), 3u);
  const OpCall old_way =
      make_op_call("decode_clip", {{"num_frames_per_clip", int64_t{4}},
                                   {"num_indices_between_frames", int64_t{5}},
                                   {"num_clips", int64_t{3}},
                                   {"resize", std::vector<double>{32 * 128 / 112}},
                                   {"crop", std::vector<double>{32}},
                                   {"flip", 0.5},
                                   {"draws", std::string("clip")},
                                   {"dtype", std::string("float32")},
                                   {"mean", reals(n.mean)},
                                   {"std", reals(n.std)},
                                   {"layout", std::string("CTHW")}})
          .value_or_throw();
  LoaderOptions lo = setup->loader->options();
  lo.fields = {
      make_field_request(setup->train_data->schema(), "video", {old_way}).value_or_throw()};
  Loader floats(setup->train_data, lo, c10::kCPU);

  StepRunner steps(*setup);
  steps.start_epoch(0);
  steps.take_first();
  int64_t batches = 0;
  for (const Batch& expected : floats.epoch(0)) {
    ASSERT_TRUE(steps.has_batch());
    EXPECT_EQ(steps.batch()["video"].scalar_type(), at::kByte);  // a quarter of the bytes
    const at::Tensor input = steps.on_device(steps.batch(), *setup->train_data).first;
    const at::Tensor want = expected["video"].view({-1, 3, 4, 32, 32});
    ASSERT_EQ(input.sizes(), want.sizes());
    EXPECT_LE((input - want).abs().max().item<double>(), 1e-6) << "batch " << batches;
    steps.next_batch();
    ++batches;
  }
  EXPECT_EQ(batches, 2);
  EXPECT_FALSE(steps.has_batch());
}

// Runs the TorchScript file argv[1] on the uint8 clips [N, 3, 4, 32, 32] in argv[2]: writes
// predict()'s logits to argv[3], and those of forward() on the clips normalised by the mean and
// std the file holds to argv[3].forward.
constexpr const char* kRunSavedVideoModelPy = R"(
import sys, torch
m = torch.jit.load(sys.argv[1])
with open(sys.argv[2], 'rb') as f:
    clips = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).view(-1, 3, 4, 32, 32)
mean, std = m.input_mean.view(1, -1, 1, 1, 1), m.input_std.view(1, -1, 1, 1, 1)
with torch.no_grad():
    for logits, path in ((m.predict(clips), sys.argv[3]),
                         (m((clips.float() / 255 - mean) / std), sys.argv[3] + '.forward')):
        with open(path, 'wb') as f:
            f.write(logits.contiguous().numpy().tobytes())
)";

// --save-model of a video model: Python's torch.jit.load runs the file, and its predict() on
// uint8 clips (and forward on them normalised) gives the trained model's own logits.
TEST_F(VideoTrainingTest, PythonRunsTheSavedVideoModelAsTheTrainerDoes) {
  if (std::system(STOKER_PYTHON " -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << STOKER_PYTHON " cannot import torch";
  TrainerOptions o = options(0);
  o.epochs = 1;
  o.save_model = dir_.path() + "/video_cnn.pt";
  Trainer trainer(o);
  EXPECT_EQ(trainer.run().model, o.save_model);

  // The trainer's clips of its first batch, uint8, and its model's logits on them.
  const std::unique_ptr<TrainingSetup> setup = set_up_training(options(0));
  StepRunner steps(*setup);
  steps.start_epoch(0);
  steps.take_first();
  const at::Tensor clips = steps.batch()["video"].reshape({-1, 3, 4, 32, 32}).contiguous();
  const at::Tensor input = steps.on_device(steps.batch(), *setup->train_data).first;
  trainer.model().train(false);
  at::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    expected = trainer.model().forward(input).contiguous();
  }
  ASSERT_EQ(expected.sizes(), (std::vector<int64_t>{6, 2}));

  const std::string u8 = dir_.path() + "/clips.u8", out = dir_.path() + "/logits";
  throw_if_error(write_file_atomically(
      u8, std::string(static_cast<const char*>(clips.data_ptr()), clips.numel())));
  throw_if_error(write_file_atomically(dir_.path() + "/run.py", kRunSavedVideoModelPy));
  const std::string python = std::string(STOKER_PYTHON) + " " + dir_.path() + "/run.py " +
                             o.save_model + " " + u8 + " " + out;
  ASSERT_EQ(std::system(python.c_str()), 0) << python;
  for (const std::string& path : {out, out + ".forward"}) {
    const std::string bytes = read_file(path).value_or_throw();
    ASSERT_EQ(bytes.size(), 6 * 2 * sizeof(float)) << path;
    const at::Tensor logits =
        torch::from_blob(const_cast<char*>(bytes.data()), {6, 2}, torch::kFloat32).clone();
    EXPECT_LE((logits - expected).abs().max().item<double>(), 1e-4) << path;
  }
}

// A frame step or a number of clips below 1 is refused.
TEST_F(VideoTrainingTest, ClipOptionsBelowOneAreRefused) {
  TrainerOptions o = options(0);
  o.frame_step = 0;
  EXPECT_EQ(validate(o).message(), "frame step must be >= 1");
  o.frame_step = 1;
  o.clips_per_video = 0;
  EXPECT_EQ(validate(o).message(), "clips per video must be >= 1");
}

}  // namespace
}  // namespace stoker
