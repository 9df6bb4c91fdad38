#pragma once
// CheckpointKeeper: a run's checkpoint directory (TrainerOptions::checkpoint_dir; checkpoint.h
// has the layout). It locks the directory for the run, resumes from it, and writes the run's
// checkpoints. Rank 0 of a distributed run creates, locks, cleans and writes the directory; every
// rank reads the checkpoint it resumes from, so the directory must be one they share.
//
//   CheckpointKeeper keeper(setup);                 // locks; with resume, restores
//   StepRunner steps(setup, keeper.resumed_step());
//   ... result.checkpoint = keeper.save(steps.step(), loss_sum, samples);
//
// Borrows the setup (training_setup.h), which must outlive it. Not thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/train/checkpoint.h"
#include "stoker/train/training_setup.h"
#include "stoker/util/directory_lock.h"

namespace stoker {

// The checkpoint a run resumed from.
struct ResumePoint {
  std::string path;  // its subdirectory
  int64_t step = 0;  // optimizer steps it had taken
  // Its unfinished epoch's training loss so far (this rank's share: rank 0 holds it all) and
  // samples, both 0 at an epoch boundary.
  double epoch_loss_sum = 0;
  int64_t epoch_samples = 0;
  // To print after "resuming from": a damaged LATEST, a schedule that changed length.
  std::vector<std::string> notes;
};

class CheckpointKeeper {
 public:
  // Without a checkpoint directory, does nothing. Otherwise rank 0 creates it, locks it (a
  // second run on it fails at once; released by release() or destruction) and removes the
  // checkpoints left half-written (a note into setup.warnings); with resume, its checkpoint is
  // checked to be this run's (run identity, loader position, step; settings unless
  // options.override_settings, which a note then names) and restored into the
  // setup's model, optimizer, loader, loss scaler and LibTorch's default generator; without,
  // a directory holding a checkpoint is refused. Throws Error naming the problem.
  explicit CheckpointKeeper(TrainingSetup& setup);
  CheckpointKeeper(const CheckpointKeeper&) = delete;
  CheckpointKeeper& operator=(const CheckpointKeeper&) = delete;

  // What the run resumed from, if it did.
  const std::optional<ResumePoint>& resumed() const { return resumed_; }
  // The training data's files as the run began (store/data_identity.h), read once for the
  // checkpoints' identity and the run log's; empty without either, and for a stoker dataset.
  const std::vector<FileBlock>& data_files() const { return data_files_; }
  int64_t resumed_step() const { return resumed_ ? resumed_->step : 0; }

  // Writes a checkpoint of the run at `step` (the loader's position, the loss scaler, the
  // model, the optimizer, the default generator) with its unfinished epoch's loss sum and
  // samples (0 at an epoch's end), and returns its path; "" without a checkpoint directory or
  // on ranks other than 0. In a distributed run the other ranks wait until it is written.
  // Throws Error if it cannot be written: the previous checkpoint stays current.
  std::string save(int64_t step, double epoch_loss_sum, int64_t epoch_samples);

  // Unlocks the directory: nothing more is written.
  void release() { lock_.reset(); }

 private:
  // What makes a checkpoint this run's.
  RunIdentity run_identity() const;
  // This run's settings as `stoker train` options (those of images for image data only).
  RunSettings run_settings() const;
  // Throws Error (kCorrupt) unless the checkpoint at `path`'s step is the one its loader
  // position implies for this run's batch and accumulation.
  void check_step(const std::string& path, const CheckpointState& state) const;
  void resume(const FoundCheckpoint& checkpoint);

  TrainingSetup& setup_;
  std::vector<FileBlock> data_files_;
  std::optional<ResumePoint> resumed_;
  // Held from construction until release(): while the run may write checkpoints.
  std::optional<DirectoryLock> lock_;
};

}  // namespace stoker
