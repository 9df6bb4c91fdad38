#pragma once
// StepRunner: the steps of a training run over its setup (training_setup.h). A step takes the
// next batch from the training loader (span "data"), makes the model's input on the device
// (InputNormalizer, span "h2d"), runs forward and loss under autocast ("forward") and the
// backward pass of loss / accum, scaled for fp16 ("backward"), and every `accum` batches (and
// after an epoch's last) the optimizer step: unscale and check the gradients, clip them, set
// the scheduled lr, step ("optimizer", with "allreduce_wait" inside in a distributed run).
//
// Two ways to drive it:
// - the epoch loop (training_run.h), which interleaves its own bookkeeping:
//     const int64_t left = steps.start_epoch(e);
//     steps.take_first();
//     while (steps.has_batch()) {
//       const double loss = steps.forward_backward();
//       if (steps.optimizer_step_due()) steps.optimizer_step();
//       steps.next_batch();
//     }
//     if (steps.pending() > 0) steps.optimizer_step();
//     steps.end_epoch();
// - measurement (`stoker doctor`), one whole step per call, epochs chained as the loader's end:
//   data_step() (the loader's rate: no model), resident_step() (the compute rate: no loader
//   after the first batch), train_step() (the real loop).
//
// Errors: a failing model, a non-finite loss (without fp16 loss scaling) or a data error throw
// Error naming epoch, batch and step. Borrows the setup, which must outlive it; not
// thread-safe (one training thread), except that the stop request is read from its atomic.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "stoker/pipeline/loader.h"
#include "stoker/train/training_setup.h"

namespace stoker {

class StepRunner {
 public:
  // Starts counting optimizer steps at `step` (a resumed run's).
  explicit StepRunner(TrainingSetup& setup, int64_t step = 0);
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  // --- The epoch loop's parts ---

  // Starts epoch `e` (0-based) where the training loader stands; returns its batches left.
  // Resets the epoch's data and h2d times.
  int64_t start_epoch(int64_t e);
  // Takes the epoch's first batch ("data").
  void take_first();
  // Takes the epoch's next batch ("data"); after its last, has_batch() is false.
  void next_batch();
  bool has_batch();
  const Batch& batch() { return **it_; }
  // Ends the epoch: the loader stops building its batches.
  void end_epoch();

  // Forward and backward of the batch taken; returns its mean loss. In a distributed run the
  // backward that ends an optimizer step starts averaging the gradients and carries this rank's
  // stop request to the others.
  double forward_backward();
  // accum backward passes since the last optimizer step.
  bool optimizer_step_due() const { return pending_ == setup_.options.accum; }
  int64_t pending() const { return pending_; }  // backward passes since the last step
  void optimizer_step();

  // The batch's images as float NCHW model input (on the CPU valid until the next call) and its
  // labels, on the model's device ("h2d"). The labels are checked against the model's classes
  // first (train/label_check.h); `data` is the dataset the batch is of (the test data's
  // batches are evaluation's, normalised at its size).
  std::pair<at::Tensor, at::Tensor> on_device(const Batch& batch, const Dataset& data);
  // The model's logits for `input`, checked (run_model), else an Error saying where; batch
  // number 0 is the evaluation after epoch `e`.
  at::Tensor logits(const at::Tensor& input, int64_t e, int64_t batch_number);
  // The stop request of a run: voted with the last step's gradients in a distributed run (the
  // same on every rank), else TrainerOptions::stop.
  bool stop_requested() const;

  int64_t step() const { return step_; }  // optimizer steps since the run began
  double lr() const { return lr_; }       // of the last optimizer step
  // Of the current epoch: waiting for batches, and making the model's input.
  double data_seconds() const { return data_seconds_; }
  double h2d_seconds() const { return h2d_seconds_; }
  int64_t epoch() const { return epoch_; }
  // 1-based number in its epoch of the batch taken.
  int64_t batch_number() const { return batch_number_; }

  // --- Measurement: whole steps, the next epoch started when one ends ---

  // Takes the next batch and makes the model's input; no model, no optimizer step.
  void data_step();
  // Forward, backward and, every `accum` batches, the optimizer step on the first batch taken,
  // held on the device for ever: the loader is never waited for again.
  void resident_step();
  // The training loop's step: the next batch, forward and backward, the optimizer step when due.
  void train_step();

 private:
  // Starts the epoch after the current one (the loader's epoch at first) if no batch is taken.
  void ensure_batch();
  double forward_backward(const Batch& batch, bool ends_step);
  // "training stopped at epoch E, batch B, step S"; batch_number 0: the evaluation of epoch e.
  std::string where(int64_t e, int64_t batch_number) const;

  TrainingSetup& setup_;
  int64_t step_ = 0;
  double lr_ = 0;
  std::optional<EpochRange> range_;
  std::optional<EpochRange::Iterator> it_;
  int64_t epoch_ = 0;
  int64_t left_ = 0;   // batches of the epoch from where it started
  int64_t taken_ = 0;  // of them, taken
  int64_t batch_number_ = 0;
  int64_t pending_ = 0;
  double data_seconds_ = 0;
  double h2d_seconds_ = 0;
};

}  // namespace stoker
