#pragma once
// Training setup: a run's TrainerOptions validated (the one place they are), then its data
// opened and checked, its device resolved, and its model, optimizer, lr schedule, loss scaler,
// input normalizer and loaders built — every part a run needs before its first step, with no
// step taken and nothing written. In a distributed run the ranks check that they agree on the
// run and start from rank 0's parameters.
//
//   std::unique_ptr<TrainingSetup> setup = set_up_training(options);  // throws Error
//   StepRunner steps(*setup);                                          // step_runner.h
//
// The Trainer builds one and adds the bookkeeping (checkpoint_keeper.h, run_record.h) and the
// epoch loop (training_run.h); `stoker doctor` builds one per measured run and drives its steps
// itself. Inner layers take the options as validated here and do not check them again;
// batch_size and workers are the loader's to check (LoaderOptions), as it is built.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

#include "stoker/distributed/gradient_reducer.h"
#include "stoker/pipeline/loader.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/store/dataset.h"
#include "stoker/train/amp.h"
#include "stoker/train/input_normalizer.h"
#include "stoker/train/models.h"
#include "stoker/train/normalization_choice.h"
#include "stoker/train/schedules.h"
#include "stoker/train/trainer.h"
#include "stoker/util/status.h"

namespace stoker {

// A video run's batches also hold each sample's clips' frame indices, int64 [B, K?, frames]
// (clip_frame_indices with the clips' own sampling; K where clips_per_video > 1), in this field.
inline constexpr const char* kFrameIndicesField = "frame_indices";

// Evaluation runs in larger batches than training: faster, and its results do not depend on the
// batch size (up to float rounding).
inline constexpr int64_t kEvalBatchSize = 256;

// kInvalidArgument naming the first of `options`' own values out of range (epochs, accum,
// clip_grad, max_steps, sample_cost, image_size, frames, augment_ops, mixup_alpha, cutmix_alpha,
// random_erase; resume without a checkpoint
// directory), else
// ok. What needs the data or the device is checked as the setup finds them.
Status validate(const TrainerOptions& options);

// The call of a training augmentation (TrainerOptions::augment_ops) `text` names: a pixel
// operation's, checked by the registry; kInvalidArgument otherwise.
Result<OpCall> augment_op(const std::string& text);

// Whether the training loader normalises its images (float32 batches) rather than the device:
// for MixUp, CutMix and RandomErasing, which work on the normalised image.
bool normalizes_in_loader(const TrainerOptions& o);

// The parts of a run, ready for its first step. Owns everything but the borrowed pointers of
// `options` (process group, tracer, stop, out).
struct TrainingSetup {
  // As given, but `eval` false when the data has no evaluation split, `workers` the count the
  // training loader resolved (unless tuned) and each of `augment_ops` with all its parameters.
  TrainerOptions options;
  int rank = 0;        // in the process group
  int world_size = 1;  // ranks training together
  c10::Device device{c10::kCPU};
  int threads = 1;  // compute threads in use (at::get_num_threads())
  // The training loader's workers: tuned, or the threads it runs (one per core resolved).
  WorkerCount workers = 0;
  std::vector<std::string> warnings;  // slow configurations and defaults, said before training
  std::string eval_note;              // what is evaluated, or why nothing is
  std::shared_ptr<const Dataset> train_data;
  std::shared_ptr<const Dataset> test_data;  // null without evaluation
  // The samples each record of train_data (test_data) gives an epoch through the "per_record"
  // order: K = --clips-per-video (--eval-clips-per-video) for videos that are not a video folder,
  // whose records are its clips already; else 1. An epoch is the split's size times it.
  int64_t train_per_record = 1;
  int64_t test_per_record = 1;
  ModelSpec spec;
  std::string input_field;  // the batches' model input: "image", or "video" (clips)
  std::unique_ptr<Model> model;
  std::vector<at::Tensor> params;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<GradientReducer> reducer;  // distributed runs only
  std::unique_ptr<LrSchedule> schedule;      // its total_steps: the whole run's optimizer steps
  LossScaler scaler{AmpMode::kOff};
  NormalizationChoice normalization;           // the mean and std in use, and their origin
  std::unique_ptr<InputNormalizer> normalize;  // uint8 images -> model input, on `device`
  // Evaluation's (its crop may differ from training's): the sample shape and its normalizer.
  std::vector<int64_t> eval_shape;
  std::unique_ptr<InputNormalizer> eval_normalize;
  std::unique_ptr<Loader> loader;       // this rank's shard of the training data
  std::unique_ptr<Loader> test_loader;  // null without evaluation

  // This process prints and writes files: rank 0, or the only process.
  bool leads() const { return rank == 0; }
  // Optimizer steps in one epoch (a step every `accum` batches and at an epoch's end).
  int64_t steps_per_epoch() const;
};

// Validates `options` (validate), then builds the run's parts. Throws Error naming the problem:
// options out of range, a missing or unconverted dataset, a schema or label the model cannot
// take, a batch or model too large for the machine's memory, a model that fails on the data,
// ranks that disagree.
std::unique_ptr<TrainingSetup> set_up_training(TrainerOptions options);

}  // namespace stoker
