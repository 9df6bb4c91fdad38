#pragma once
// Checkpoints: everything needed to continue a training run exactly — model and optimizer
// tensors, loss-scaler and loader state, step counters and the RNG state — written crash-safely
// (DESIGN.md contract 7).
//
// A checkpoint directory DIR holds complete checkpoints in subdirectories
// step-<step>-<random>/ (model.pt, optimizer.pt, rng.pt, then meta.json; each file fsynced)
// and a file DIR/LATEST naming the current one. A new checkpoint is written beside the current
// one and LATEST is switched atomically only once it is complete, so a crash or error at any
// point leaves the previous checkpoint current: a failed run never overwrites a good one. The
// others (the previous one, half-written ones left by a crash) are removed after the switch.
//
// Thread-safety: the functions may run concurrently on different directories only; they use
// the process-wide default CPU generator.

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>

#include "stoker/pipeline/loader.h"
#include "stoker/train/amp.h"
#include "stoker/train/models.h"
#include "stoker/util/status.h"

namespace stoker {

// Version of the checkpoint layout (meta.json's format_version); a checkpoint of another one
// is refused.
inline constexpr int kCheckpointFormatVersion = 1;

// The non-tensor part of a checkpoint.
struct CheckpointState {
  std::string model;       // Model::name() of the model it was written for
  int64_t step = 0;        // optimizer steps taken since the run began
  LoaderState loader;      // where the training data continues
  LossScalerState scaler;  // only meaningful with amp fp16
  // The unfinished epoch's training loss summed over its samples so far, and their count
  // (both 0 at an epoch boundary), so its mean loss survives an interruption.
  double epoch_loss_sum = 0;
  int64_t epoch_samples = 0;
  // The optimizer steps of the whole run that wrote it (its lr schedule's length); 0 if unknown.
  int64_t run_steps = 0;
};

// Creates `dir` (and its parents) if missing and checks that files can be created in it, so a
// run fails before training rather than at its first checkpoint. kIoError naming `dir`.
Status prepare_checkpoint_dir(const std::string& dir);

// The current checkpoint's subdirectory of `dir`: kNotFound if `dir` holds no checkpoint,
// kCorrupt if LATEST names a directory that is not there.
Result<std::string> latest_checkpoint(const std::string& dir);

// Writes a new checkpoint of `state`, `model`, `optimizer` and the default CPU generator's state
// into `dir` (which must exist) and makes it the current one. On error the previous checkpoint
// stays current and nothing new is left behind.
Status save_checkpoint(const std::string& dir, const CheckpointState& state, Model& model,
                       torch::optim::Optimizer& optimizer);

// Reads the current checkpoint of `dir` into `model` and `optimizer` (built like the saved ones:
// same architecture, same optimizer kind over model.parameters()), restores the default CPU
// generator's state and returns the rest. kNotFound without a checkpoint, kInvalidArgument if
// it was written for another model, kCorrupt if a file cannot be read.
Result<CheckpointState> load_checkpoint(const std::string& dir, Model& model,
                                        torch::optim::Optimizer& optimizer);

}  // namespace stoker
