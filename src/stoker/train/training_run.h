#pragma once
// TrainingRun: what Trainer (trainer.h) does, behind its facade — a run's epochs over its setup
// (training_setup.h), steps (step_runner.h) and bookkeeping (checkpoint_keeper.h, the run log
// with its run record, run_record.h). Each epoch: its steps with progress, step records and the
// stop checks between optimizer steps, then the evaluation on test/, the epoch line and record,
// a checkpoint. The run ends with the final model saved and a summary line.
//
// The constructor and run() keep Trainer's contract (errors, what is printed and written, the
// distributed behaviour): see trainer.h. Not thread-safe.

#include <cstdint>
#include <memory>
#include <optional>

#include "stoker/train/checkpoint_keeper.h"
#include "stoker/train/progress.h"
#include "stoker/train/run_log.h"
#include "stoker/train/step_runner.h"
#include "stoker/train/trainer.h"
#include "stoker/train/training_setup.h"
#include "stoker/util/stopwatch.h"

namespace stoker {

class TrainingRun {
 public:
  // Sets the run up, locks and resumes its checkpoint directory, checks the ranks start from
  // the same point, checks the saved model's path and opens the log. Throws Error.
  explicit TrainingRun(TrainerOptions options);
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  TrainResult run();

  TrainingSetup& setup() { return *setup_; }
  const TrainingSetup& setup() const { return *setup_; }

 private:
  // Trains epoch `e` (0-based) from where the loader is; false if the run stopped inside it.
  bool train_epoch(int64_t e, EpochMetrics& metrics, TrainResult& result);
  // Fills `m` with epoch `e`'s training loss, step, lr and time split so far.
  void measure(int64_t e, double loss_sum, int64_t loss_samples, const Stopwatch& epoch_start,
               EpochMetrics& m) const;
  void evaluate(int64_t e, EpochMetrics& metrics);
  // A "step" record every log_every optimizer steps: the mean loss since the last one.
  void log_step(int64_t e, int64_t samples);
  StopReason stop_reason() const;
  // Prints the training loader's tuning once: when it has settled, or (`at_end`) as it stands.
  void say_tuning(bool at_end);
  // Prints what the sources of the training and evaluation data noted since it last did (a
  // damaged transcode-cache file rebuilt: ShardSourceStats::notes).
  void say_source_notes();

  std::unique_ptr<TrainingSetup> setup_;
  Progress progress_;
  CheckpointKeeper keeper_;
  StepRunner steps_;
  std::optional<RunLog> log_;
  // Training loss summed over the samples since the last "step" record, and their count.
  double step_loss_sum_ = 0;
  int64_t step_loss_samples_ = 0;
  // Of an epoch interrupted by a checkpoint, until it is finished (see CheckpointState).
  double resumed_loss_sum_ = 0;
  int64_t resumed_samples_ = 0;
  bool tuning_said_ = false;  // say_tuning printed
  // The notes of the training and evaluation data's sources say_source_notes printed.
  int64_t train_notes_said_ = 0;
  int64_t test_notes_said_ = 0;
};

}  // namespace stoker
