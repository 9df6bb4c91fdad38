// Training on videos: a run's clips are those its options ask for (--frames frames
// --frame-step apart, --clips-per-video of each video an epoch, each its own sample of its
// video's label, shuffled among every video's clips, or decoded together with
// --clips-together), the same for any worker count and after a resume; evaluation's clips are
// torchvision's UniformClipSampler's, and its video accuracy sums their softmax; clips reach
// the device as uint8 and are normalised there as the loader would; a saved video model runs in
// Python as in the trainer. Built only with video.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "stoker/pipeline/field_pipeline.h"
#include "stoker/pipeline/frame_counts_memo.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/pipeline/transform.h"
#include "stoker/testing/tar_fixtures.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/video_set.h"
#include "stoker/train/compute_settings.h"
#include "stoker/train/step_runner.h"
#include "stoker/train/trainer.h"
#include "stoker/train/training_setup.h"
#include "stoker/train/video_accuracy.h"
#include "stoker/util/atomic_file.h"
#include "stoker/video/clip_sampler.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The frame counts of the test folder's classes: long's videos have 75 frames, short's 50.
constexpr int64_t kFrameCounts[] = {75, 50};

class VideoTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
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

  // A folder with train/ and test/, each the videos above.
  std::string split_dir() const {
    const std::string root = dir_.path() + "/splits";
    fs::create_directories(root);
    for (const char* split : {"train", "test"})
      fs::copy(data_dir(), root + "/" + split, fs::copy_options::recursive);
    return root;
  }

  // A folder with train/ and test/, each the videos above as one WebDataset tar (members
  // NNNN.video and NNNN.cls, in the folder's order: its classes and names sorted).
  std::string tar_split_dir() const {
    const std::string root = dir_.path() + "/tars";
    std::vector<tar_fixtures::Member> members;
    const char* files[] = {"h264_gop12_bframes.mp4", "h264_gop12_no_bframes.mp4", "h264_gop1.mp4",
                           "hevc_gop12_bframes.mp4"};
    for (int v = 0; v < 4; ++v) {
      const std::string key = "000" + std::to_string(v);
      members.push_back({key + ".video", video::testing::video_bytes(files[v])});
      members.push_back({key + ".cls", std::to_string(v / 2)});
    }
    for (const char* split : {"train", "test"}) {
      fs::create_directories(root + "/" + split);
      tar_fixtures::write_tar(root + "/" + split + "/videos.tar", members);
    }
    return root;
  }

  // 4 frames 5 apart, 3 clips per video, 32 px, batches of 2, without evaluation.
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

  // options(0) on split_dir(), evaluated on `clips` clips a video.
  TrainerOptions evaluating(int clips) const {
    TrainerOptions o = options(0);
    o.data_dir = split_dir();
    o.eval = true;
    o.eval_clips_per_video = clips;
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

// Writes each sample's dataset index and part, int64 [2].
class SampleIdentity : public Transform {
 public:
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {2}; }
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    const int64_t id[2] = {input.index, input.part};
    std::memcpy(slot, id, sizeof id);
    return Status::ok();
  }
};

// The (index, part) of every sample of the training loader's epoch 0, in order, from `workers`
// workers, its first `resume_after` batches taken by one loader and the rest by another
// restored from its state (0: one loader).
std::vector<std::pair<int64_t, int64_t>> training_order(const TrainingSetup& setup, int workers,
                                                        int64_t resume_after = 0) {
  LoaderOptions lo = setup.loader->options();
  lo.workers = workers;
  lo.fields = {FieldRequest("id", std::make_shared<SampleIdentity>())};
  std::vector<std::pair<int64_t, int64_t>> out;
  const auto take = [&](const Batch& batch) {
    for (int64_t i = 0; i < batch.size(); ++i)
      out.emplace_back(batch["id"][i][0].item<int64_t>(), batch["id"][i][1].item<int64_t>());
  };
  Loader first(setup.train_data, lo);
  std::optional<LoaderState> state;
  for (const Batch& batch : first.epoch(0)) {
    take(batch);
    if (batch.index() + 1 == resume_after) {
      state = first.state();
      break;
    }
  }
  if (!state) return out;
  Loader second(setup.train_data, lo);
  second.restore(*state);
  for (const Batch& batch : second.epoch(0)) take(batch);
  return out;
}

// Each clip of a video its own sample: an epoch holds every (video, clip) once, for 1 and 2
// workers and across a resume, in the order of a global shuffle of all the clips (the loader's
// Fisher-Yates permutation of the 12 samples), so a video's clips are spread, not together as
// a sample's.
TEST_F(VideoTrainingTest, AnEpochHoldsEveryClipOfEveryVideoOnceShuffledAcrossVideos) {
  const std::unique_ptr<TrainingSetup> setup = set_up_training(options(0));
  ASSERT_EQ(setup->train_data->size(), 4u * 3);
  const std::vector<std::pair<int64_t, int64_t>> order = training_order(*setup, 1);
  std::set<std::pair<int64_t, int64_t>> clips;
  for (const auto& [index, part] : order) clips.emplace(index / 3, part);
  EXPECT_EQ(order.size(), 12u);
  EXPECT_EQ(clips.size(), 12u);  // every (video, clip) exactly once
  for (const auto& [index, part] : order) EXPECT_EQ(part, index % 3) << index;
  EXPECT_EQ(training_order(*setup, 2), order);
  EXPECT_EQ(training_order(*setup, 1, /*resume_after=*/2), order);

  // The loader's global permutation of the 12 clips, exactly.
  SamplerOptions so;
  so.seed = 7;
  const std::vector<int64_t> permutation = Sampler(12, so).order(0);
  ASSERT_EQ(order.size(), permutation.size());
  for (size_t p = 0; p < order.size(); ++p) EXPECT_EQ(order[p].first, permutation[p]) << p;
  // In that order (seed 7) no video's 3 clips are at consecutive positions.
  int together = 0;
  for (int64_t video = 0; video < 4; ++video) {
    std::vector<size_t> at;
    for (size_t p = 0; p < order.size(); ++p)
      if (order[p].first / 3 == video) at.push_back(p);
    together += at.back() - at.front() == 2;
  }
  EXPECT_EQ(together, 0);
}

TEST_F(VideoTrainingTest, AnEpochHoldsClipsOfFramesStepApartForAnyWorkerCount) {
  const Epoch epoch = first_epoch(options(0));
  int64_t clips = 0;
  std::map<int64_t, std::set<int64_t>> starts;  // by label
  for (size_t b = 0; b < epoch.inputs.size(); ++b) {
    const at::Tensor& frames = epoch.frames[b];  // [B, 4]: a clip a sample
    ASSERT_EQ(frames.dim(), 2);
    ASSERT_EQ(frames.size(1), 4);
    EXPECT_EQ(epoch.inputs[b].sizes(), (std::vector<int64_t>{frames.size(0), 3, 4, 32, 32}));
    clips += frames.size(0);
    for (int64_t c = 0; c < frames.size(0); ++c) {
      const int64_t label = epoch.labels[b][c].item<int64_t>();
      EXPECT_EQ(epoch.targets[b][c].item<int64_t>(), label);
      const int64_t start = frames[c][0].item<int64_t>();
      EXPECT_GE(start, 0);
      EXPECT_LE(start + 3 * 5, kFrameCounts[label] - 1);
      for (int64_t t = 0; t < 4; ++t) EXPECT_EQ(frames[c][t].item<int64_t>(), start + 5 * t);
      starts[label].insert(start);
    }
  }
  EXPECT_EQ(clips, 3 * 4);          // clips_per_video x videos
  EXPECT_GT(starts[0].size(), 2u);  // the clips of a class's videos start at different frames
  const Epoch threaded = first_epoch(options(3));
  ASSERT_EQ(threaded.inputs.size(), epoch.inputs.size());
  for (size_t b = 0; b < epoch.inputs.size(); ++b) {
    EXPECT_TRUE(threaded.frames[b].equal(epoch.frames[b])) << "batch " << b;
    EXPECT_TRUE(threaded.inputs[b].equal(epoch.inputs[b])) << "batch " << b;
  }
}

TEST_F(VideoTrainingTest, ClipsTogetherHoldClipsPerVideoClipsASampleForAnyWorkerCount) {
  TrainerOptions o = options(0);
  o.clips_together = true;
  const Epoch epoch = first_epoch(o);
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
  o.loader.workers = 3;
  const Epoch threaded = first_epoch(o);
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
  TrainerOptions together = options(0);
  together.clips_together = true;
  const std::unique_ptr<TrainingSetup> setup = set_up_training(together);
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
  o.clips_together = true;
  o.epochs = 1;
  o.save_model = dir_.path() + "/video_cnn.pt";
  Trainer trainer(o);
  EXPECT_EQ(trainer.run().model, o.save_model);

  // The trainer's clips of its first batch, uint8, and its model's logits on them.
  const std::unique_ptr<TrainingSetup> setup = set_up_training(o);
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

// Prints torchvision's UniformClipSampler's clips of a dataset of videos of the clip counts
// argv[2:] (a VideoClips of those videos, in order: its clips, not the videos, are what the
// sampler reads), argv[1] (a comma-separated list) clips a video: a line per count, the
// dataset's clip indices.
constexpr const char* kUniformClipsPy = R"(
import sys, torch
from torchvision.datasets.samplers import UniformClipSampler
from torchvision.datasets.video_utils import VideoClips
clips = VideoClips.__new__(VideoClips)
clips.clips = [torch.zeros(int(n), 1) for n in sys.argv[2:]]
for k in sys.argv[1].split(','):
    print(' '.join(str(i) for i in UniformClipSampler(clips, int(k))))
)";

// torchvision's UniformClipSampler's clips of a dataset of videos of `lengths` clips, `k` a
// video for each of `ks`: a list of the dataset's clip indices each; nullopt where Python
// cannot import torchvision.
std::optional<std::vector<std::vector<int64_t>>> torchvision_uniform_clips(
    const std::string& dir, const std::vector<int64_t>& ks, const std::vector<int64_t>& lengths) {
  if (std::system(STOKER_PYTHON " -c 'import torchvision' >/dev/null 2>&1") != 0)
    return std::nullopt;
  throw_if_error(write_file_atomically(dir + "/uniform.py", kUniformClipsPy));
  std::string command = std::string(STOKER_PYTHON) + " " + dir + "/uniform.py ";
  for (size_t i = 0; i < ks.size(); ++i) command += (i ? "," : "") + std::to_string(ks[i]);
  for (const int64_t n : lengths) command += " " + std::to_string(n);
  command += " > " + dir + "/uniform.txt";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
  std::istringstream in(read_file(dir + "/uniform.txt").value_or_throw());
  std::vector<std::vector<int64_t>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream values(line);
    out.emplace_back();
    for (int64_t i = 0; values >> i;) out.back().push_back(i);
  }
  return out;
}

// A clip sampler whose clips are a video's frames (a clip a frame, every frame): clip counts
// are frame counts, for uniform_first_clips.
video::ClipSampler frame_clips() {
  video::ClipSampler sampler;
  sampler.starts = video::ClipStarts::kUniformClips;
  return sampler;
}

// uniform_clip_indices from uniform_first_clips' offsets is UniformClipSampler over a dataset
// of videos of 0 to 60 clips (a video without clips has none, and counts none), 1 to 32 clips
// a video; for some videos the offset rounds otherwise than the video alone would.
TEST_F(VideoTrainingTest, UniformClipIndicesAreTorchvisionsUniformClipSamplers) {
  std::vector<int64_t> ks, lengths = {0};
  for (int64_t k = 1; k <= 32; ++k) ks.push_back(k);
  for (int64_t n = 1; n <= 60; ++n) lengths.insert(lengths.end(), {n, n % 7});
  const auto expected = torchvision_uniform_clips(dir_.path(), ks, lengths);
  if (!expected) GTEST_SKIP() << STOKER_PYTHON " cannot import torchvision";
  ASSERT_EQ(expected->size(), ks.size());
  const std::vector<int64_t> first = video::uniform_first_clips(frame_clips(), lengths);
  int64_t offset_matters = 0;
  for (size_t k = 0; k < ks.size(); ++k) {
    std::vector<int64_t> ours;
    for (size_t v = 0; v < lengths.size(); ++v) {
      if (lengths[v] == 0) continue;  // torchvision leaves it out
      const std::vector<int64_t> clips = video::uniform_clip_indices(lengths[v], ks[k], first[v]);
      offset_matters += clips != video::uniform_clip_indices(lengths[v], ks[k]);
      for (const int64_t clip : clips) ours.push_back(first[v] + clip);
    }
    EXPECT_EQ(ours, (*expected)[k]) << ks[k] << " clips a video";
  }
  EXPECT_GT(offset_matters, 0);
}

// A video's offset in its dataset changes its clips: of a dataset of a video of 1 clip and one
// of 3, 15 clips a video, torchvision takes the second's clip 1 as its 8th: linspace(1, 3, 15)
// in float32 (its step 2 / 14 rounded up) gives 3 - 7 step = 2, where the video alone,
// linspace(0, 2, 15), gives 2 - 7 step = 0.99999994, clip 0.
TEST_F(VideoTrainingTest, AVideosOffsetInItsDatasetRoundsItsClips) {
  const auto expected = torchvision_uniform_clips(dir_.path(), {15}, {1, 3});
  if (!expected) GTEST_SKIP() << STOKER_PYTHON " cannot import torchvision";
  const std::vector<int64_t> second = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2};
  std::vector<int64_t> want(15, 0);
  for (const int64_t clip : second) want.push_back(1 + clip);
  EXPECT_EQ((*expected)[0], want);
  EXPECT_EQ(video::uniform_first_clips(frame_clips(), {1, 3}), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(video::uniform_clip_indices(3, 15, 1), second);
  EXPECT_NE(video::uniform_clip_indices(3, 15), second);
}

// The videos as WebDataset tars: --clips-per-video 2 gives each video 2 samples through the
// "per_record" order, the folder's clips byte for byte (the same positions, each clip drawing
// from the same stream: sample r K + k), 4 videos x 2 / 2 = 4 batches; evaluation's
// --eval-clips-per-video 5 gives the folder's uniform clips, each video's in order.
TEST_F(VideoTrainingTest, ATarOfTheVideosGivesTheFoldersClipsByteForByte) {
  TrainerOptions folder = options(0);
  folder.clips_per_video = 2;
  folder.data_dir = split_dir();
  TrainerOptions tar = folder;
  tar.data_dir = tar_split_dir();
  const Epoch expected = first_epoch(folder);
  const Epoch got = first_epoch(tar);
  ASSERT_EQ(got.inputs.size(), 4u);
  ASSERT_EQ(expected.inputs.size(), 4u);
  for (size_t b = 0; b < got.inputs.size(); ++b) {
    EXPECT_TRUE(got.frames[b].equal(expected.frames[b])) << "batch " << b;
    EXPECT_TRUE(got.inputs[b].equal(expected.inputs[b])) << "batch " << b;
    EXPECT_TRUE(got.labels[b].equal(expected.labels[b])) << "batch " << b;
  }

  folder.eval = tar.eval = true;
  folder.eval_clips_per_video = tar.eval_clips_per_video = 5;
  const std::unique_ptr<TrainingSetup> a = set_up_training(folder);
  const std::unique_ptr<TrainingSetup> b = set_up_training(tar);
  EXPECT_EQ(b->test_data->size() * b->test_per_record, 4u * 5);
  std::vector<at::Tensor> folder_clips;
  for (const Batch& batch : a->test_loader->epoch(0))
    folder_clips.push_back(batch[kFrameIndicesField].clone());
  size_t at = 0;
  for (const Batch& batch : b->test_loader->epoch(0)) {
    ASSERT_LT(at, folder_clips.size());
    EXPECT_TRUE(batch[kFrameIndicesField].equal(folder_clips[at++]));
  }
  EXPECT_EQ(at, folder_clips.size());
  const TrainResult result = Trainer(tar).run();
  ASSERT_FALSE(result.epochs.empty());
  EXPECT_TRUE(result.epochs.back().test_video_accuracy.has_value());
}

// --eval-clips-per-video 5: evaluation's samples are each video's 5 clips, in order, at
// UniformClipSampler's clips of the video's clips (4 frames of every 5th: 12 clips of the 75
// frames, 7 of the 50); the run reports clip and video accuracy.
TEST_F(VideoTrainingTest, EvaluationTakesUniformClipSamplersClipsOfEachVideo) {
  const TrainerOptions o = evaluating(5);
  const std::unique_ptr<TrainingSetup> setup = set_up_training(o);
  ASSERT_EQ(setup->test_data->size(), 4u * 5);
  const auto expected = torchvision_uniform_clips(dir_.path(), {5}, {12, 12, 7, 7});
  if (!expected) GTEST_SKIP() << STOKER_PYTHON " cannot import torchvision";
  const int64_t first[] = {0, 12, 24, 31};  // each video's first clip in the dataset
  int64_t sample = 0;
  for (const Batch& batch : setup->test_loader->epoch(0)) {
    const at::Tensor frames = batch[kFrameIndicesField];  // [n, 4]
    for (int64_t i = 0; i < batch.size(); ++i, ++sample) {
      const int64_t clip = (*expected)[0][sample] - first[sample / 5];
      for (int64_t t = 0; t < 4; ++t)
        EXPECT_EQ(frames[i][t].item<int64_t>(), (clip + t) * 5) << "sample " << sample;
    }
  }
  EXPECT_EQ(sample, 20);

  const TrainResult result = Trainer(o).run();
  ASSERT_FALSE(result.epochs.empty());
  const EpochMetrics& m = result.epochs.back();
  ASSERT_TRUE(m.test_accuracy && m.test_video_accuracy);
  EXPECT_GE(*m.test_video_accuracy, 0);
  EXPECT_LE(*m.test_video_accuracy, 1);
  EXPECT_NE(m.to_json().find("\"test_video_accuracy\""), std::string::npos);
}

// A loader's clips and their frame indices by "uniform_clips", requested with one
// FrameCountsMemo (as a trainer's loader requests them), read the videos' frame counts once,
// not once a request (issue 63: each read indexes every video of the dataset).
TEST_F(VideoTrainingTest, TheClipsAndTheirFrameIndicesReadTheFrameCountsOnce) {
  const TrainerOptions o = evaluating(5);
  const std::unique_ptr<TrainingSetup> setup = set_up_training(o);
  const Dataset& data = *setup->test_data;
  const std::vector<std::pair<std::string, ParamValue>> sampling = {
      {"sampler", std::string("uniform_clips")},
      {"num_frames_per_clip", int64_t{4}},
      {"num_indices_between_frames", int64_t{5}}};
  std::vector<std::pair<std::string, ParamValue>> clip = sampling, indices = sampling;
  clip.insert(clip.end(), {{"resize", std::vector<double>{32}}, {"crop", std::vector<double>{32}}});
  indices.emplace_back("video", std::string("video"));
  const OpCall clips = make_op_call("decode_clip", clip).value_or_throw();
  const OpCall frames = make_op_call("clip_frame_indices", indices).value_or_throw();
  FrameCountsMemo frame_counts;
  for (const auto& [field, call] : {std::pair{"video", clips}, std::pair{"frames", frames}})
    ASSERT_TRUE(make_field_request(data.schema(), field, {call}, {}, data.manifest().sample_parts,
                                   {}, &data, &frame_counts)
                    .is_ok());
  EXPECT_EQ(frame_counts.reads(), 1);
}

// Video accuracy sums each video's clips' softmax: video 0 (label 0) has one clip of 3 right,
// but sure of it; video 1 (label 1) two of 3. Clip accuracy 3 / 6, video accuracy 2 / 2 (a
// vote of the clips would lose video 0).
TEST(VideoAccuracyTest, AVideoIsRightWhereItsClipsSummedSoftmaxIs) {
  const at::Tensor logits =
      torch::tensor({{5.0, 0.0}, {0.0, 0.5}, {0.0, 0.5}, {0.0, 2.0}, {0.0, 2.0}, {1.0, 0.0}});
  const at::Tensor videos = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kLong);
  const at::Tensor labels = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kLong);
  EXPECT_EQ(logits.argmax(1).eq(labels).sum().item<int64_t>(), 3);
  // The expected, from the definition.
  const at::Tensor sums =
      at::zeros({2, 2}, at::kDouble).index_add_(0, videos, at::softmax(logits, 1).to(at::kDouble));
  const double expected =
      sums.argmax(1).eq(torch::tensor({0, 1})).to(at::kDouble).mean().item<double>();
  EXPECT_EQ(expected, 1.0);
  VideoAccuracy accuracy(2, 2);
  // Added in two parts, clips of both videos in each.
  accuracy.add(logits.slice(0, 0, 4), videos.slice(0, 0, 4), labels.slice(0, 0, 4));
  accuracy.add(logits.slice(0, 4), videos.slice(0, 4), labels.slice(0, 4));
  EXPECT_EQ(accuracy.accuracy(nullptr), expected);
}

// A frame step or a number of clips below 1 is refused.
TEST_F(VideoTrainingTest, ClipOptionsBelowOneAreRefused) {
  TrainerOptions o = options(0);
  o.frame_step = 0;
  EXPECT_EQ(validate(o).message(), "frame step must be >= 1");
  o.frame_step = 1;
  o.clips_per_video = 0;
  EXPECT_EQ(validate(o).message(), "clips per video must be >= 1");
  o.clips_per_video = 1;
  o.eval_clips_per_video = 0;
  EXPECT_EQ(validate(o).message(), "eval clips per video must be >= 1");
}

}  // namespace
}  // namespace stoker
