#pragma once
// Trainer: trains a classifier on a dataset, or on a folder's train/ evaluated on its test/
// (fields image: uint8 [C,H,W] or encoded JPEG/PNG bytes, and label: int64), with the loader
// feeding batches ahead of the step — the engine behind `stoker train`.
//
//   stoker::TrainerOptions options;  // converted Fashion-MNIST, mlp, 5 epochs, batch 64, Adam 1e-3
//   stoker::Trainer trainer(options);
//   stoker::TrainResult result = trainer.run();
//
// A step: forward and loss under autocast, backward of loss / accum (scaled for fp16), and
// every `accum` batches (and at the end of an epoch) an optimizer step: unscale and check the
// gradients, clip them, set the scheduled lr, step. Each epoch ends with an evaluation on test/
// and a checkpoint. A stop request or the step limit ends the run at the next optimizer-step
// boundary with a checkpoint; --resume from it continues the exact same sequence of updates.
//
// The library changes no process-wide state of its own accord (the CLI does that): it uses the
// intra-op thread count the process has (the CLI sets it: set_compute_settings), prints only to
// `out`, converts no data, and initialises the model from `seed` without moving LibTorch's
// default generator. A model's random layers (dropout) draw from that generator during run(),
// as in any LibTorch loop; resume sets it to the checkpoint's state so that they draw as the
// interrupted run would have.
//
// A thin facade: behind it (private, src/stoker/train/) training_setup.h validates the options
// and builds the run's parts, step_runner.h takes its steps, checkpoint_keeper.h and
// run_record.h keep its checkpoints and log, and training_run.h runs its epochs.

#include <c10/core/Device.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/cache/data_access.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/loader_core.h"
#include "stoker/trace/tracer.h"
#include "stoker/train/amp.h"
#include "stoker/train/models.h"
#include "stoker/train/optimizers.h"
#include "stoker/train/progress.h"
#include "stoker/train/schedules.h"
#include "stoker/util/status.h"

namespace stoker {

class ProcessGroup;  // distributed/process_group.h
class TrainingRun;   // the run behind the facade (private)

// What to train on, how, and where results go. Plain value; defaults are the embedded default.
// The trainer's loader settings by default: one worker (the other cores compute), and tuning,
// when asked for, starting from one worker.
inline LoaderSettings training_loader_settings() {
  LoaderSettings s;
  s.workers = 1;
  s.tune.start_workers = 1;
  return s;
}

struct TrainerOptions {
  // A dataset directory (trained on, not evaluated), or a folder holding train/ and test/ (or
  // val/) datasets (store/data_location.h). Empty: default_fashion_mnist_dir(), which must have
  // been converted (convert_fashion_mnist; `stoker train` converts it on first use): an Error
  // saying how otherwise. Or the URL of either in S3 or behind HTTP (s3://, http(s)://), read
  // through the cache `data_access` describes (docs/REMOTE-DESIGN.md).
  std::string data_dir;
  // Its cache folder, also where videos' indexes are kept for later runs (loader_cache_dir).
  DataAccessOptions data_access;
  std::string model = "mlp";  // a make_model() name or a TorchScript .pt file
  int64_t epochs = 5;         // >= 1
  int64_t batch_size = 64;    // >= 1 (checked by the loader, LoaderOptions)
  OptimizerSpec optimizer;    // Adam, lr 1e-3
  // The lr schedule; its lr and total_steps are set from optimizer.lr and the run's length.
  // Cosine decay to 0 by default: the last epoch's model is then the settled one rather than a
  // noisy sample (Fashion-MNIST mlp, 5 epochs, seeds 0-4: test accuracy 0.882-0.886 against
  // 0.867-0.880 with a constant lr).
  ScheduleSpec schedule{ScheduleKind::kCosine};
  AmpMode amp = AmpMode::kOff;
  int64_t accum = 1;     // batches per optimizer step (gradient accumulation), >= 1
  double clip_grad = 0;  // max gradient norm; 0 = no clipping
  // The cross-entropy's label smoothing in [0, 1] (torchvision's reference --label-smoothing),
  // in training and evaluation alike.
  double label_smoothing = 0;
  // Training batches mixed as torchvision's reference --mixup-alpha and --cutmix-alpha mix them
  // (0: off; both set: one of the two per batch, a RandomChoice): by the loader's workers, the
  // labels made soft targets over the classes and the loss a soft-target cross-entropy (with
  // label_smoothing, as the reference's).
  double mixup_alpha = 0;
  double cutmix_alpha = 0;
  // The reference's --random-erase: RandomErasing(p) on each normalised training image (0: off).
  // With it or mixing, the training loader normalises (float32 batches) instead of the device.
  double random_erase = 0;
  // The loaders' settings (loader_settings.h, which checks them), for training and evaluation
  // alike: one worker by default, the other cores computing. Tuned workers are tuned while
  // training, from 1 worker up to the machine's cores, during about the first 100 steps (the
  // evaluation loader tunes its own). Batches are the same whatever the count (docs/DESIGN.md
  // contract 1), so tuning cannot change what is trained.
  LoaderSettings loader = training_loader_settings();
  // "cpu", "cuda" or "cuda:N"; "" (default): CUDA if this LibTorch has it and a device is
  // visible, else the CPU.
  std::string device;
  // Model initialisation (LibTorch's default CPU generator seeded for it, then put back) and
  // data order.
  uint64_t seed = 0;
  // Input normalisation per channel, (x / 255 - mean) / std, for training and evaluation. Empty:
  // the training data's statistics from its manifest, or for data without them (converted by an
  // older stoker) ImageNet's for encoded images and Fashion-MNIST's for stored pixels, with a
  // warning (normalization_choice.h).
  std::vector<float> mean;
  std::vector<float> std;
  // Datasets of encoded images (a bytes field 'image', as `stoker convert imagefolder` stores
  // them): the side of the square input the model sees. Training samples go through
  // RandomResizedCrop(image_size) + RandomHorizontalFlip with `augment`, evaluation samples
  // through Resize(image_size * 256 / 224) + CenterCrop(image_size), torchvision's recipe.
  int image_size = 224;
  // The reference's --train-crop-size, --val-resize-size and --val-crop-size: the training crop's
  // side, and evaluation's Resize then CenterCrop (0: image_size, image_size; and the crop's
  // side x 256 / 224). The model is made for the training crop; a built-in model whose size
  // depends on its input's (mlp, cnn) needs the two crops equal.
  int train_crop_size = 0;
  int val_resize_size = 0;
  int val_crop_size = 0;
  // Datasets of videos (a bytes field 'video': a video folder, or a dataset of them): clips of
  // `frames` frames `frame_step` apart (decode_clip's num_frames_per_clip and
  // num_indices_between_frames, torchcodec's names) as torchvision's video reference samples
  // them: in training `clips_per_video` clips of each video an epoch at random starts, each its
  // own sample, shuffled among every video's clips (its RandomClipSampler; a local video folder
  // opened with clips_per_video: video/clips_per_video.h), batches [B, 3, T, H, W] of B clips;
  // `clips_together`: a sample per video holding its K clips [B, K, 3, T, H, W], decoded
  // together (a GOP decoded once for them all: faster, but a batch holds B videos' clips), the
  // model seeing B * K clips. In evaluation `eval_clips_per_video` clips of each video evenly
  // spaced (its UniformClipSampler: decode_clip's "uniform_clips"), reported as clip accuracy and
  // video accuracy (softmax summed over a video's clips). Frames resized to val_resize_size (0:
  // the crop's side x 128 / 112) and cropped to train_crop_size (randomly, each clip, with a
  // flip of probability augment.flip_probability; evaluation: centred, val_crop_size),
  // normalised on the device by `mean` and `std` (default Kinetics'), for --model video_cnn.
  int frames = 16;
  int frame_step = 1;
  int clips_per_video = 1;
  bool clips_together = false;
  int eval_clips_per_video = 1;
  // The resize filter of both transforms: "bilinear" or "bicubic" (PIL's, as torchvision's
  // reference `--interpolation`).
  std::string interpolation = "bilinear";
  RandomCropOptions augment;
  // Pixel operations applied to each training image after the crop (or to the stored image),
  // in order: calls as `stoker train --augment` writes them, "color_jitter:brightness=0.4"
  // (`stoker ops` lists the operations). Evaluation images are not augmented.
  std::vector<std::string> augment_ops;
  // The fast mode (ImageOutput::dct_scaling): decode large JPEG crops at a reduced DCT scale
  // (faster; pixels differ from torchvision's). False, the default: torchvision's pixels.
  bool dct_scaling = false;
  std::string checkpoint_dir;  // empty: no checkpoints; see checkpoint.h
  // Continue from checkpoint_dir's checkpoint if it holds one (else start from scratch).
  // Without it, a checkpoint_dir that already holds a checkpoint is an error.
  bool resume = false;
  // With resume: go on from a checkpoint written with other settings (the lr, momentum, weight
  // decay, warm-up, schedule's shape, amp, clipping, image crops: checkpoint.h, RunSettings),
  // naming what changed in a note, instead of refusing it.
  bool override_settings = false;
  // Append the run's records to this JSONL file (RunLog): a "run" record as training starts
  // (the resolved configuration, versions, data, machine), an "epoch" record per epoch
  // (EpochMetrics::to_json); "" = none. A regular file or a new path; on resume, records the
  // checkpoint does not hold are removed.
  std::string log_path;
  // Also a "step" record every this many optimizer steps (epoch, step, lr, the mean training
  // loss since the last one); 0 = none.
  int64_t log_every = 0;
  bool eval = true;       // evaluate on test/ (or val/) after every epoch, if the data has one
  int64_t max_steps = 0;  // stop (with a checkpoint) after this many optimizer steps; 0 = none
  // Checked at every optimizer-step boundary: once true the run checkpoints and stops.
  // Borrowed; typically set from a signal handler. Null: never.
  const std::atomic<bool>* stop = nullptr;
  // Write the final model here (Model::save); "" = don't. A regular file or a new path in an
  // existing directory, checked before training.
  std::string save_model;
  std::FILE* out = nullptr;  // where progress and epoch lines go (borrowed); null = silent
  std::optional<ProgressStyle> progress;  // unset: default_progress_style(out)
  // Called on the training thread with the batches done so far in the epoch: once as the
  // epoch's timing starts (0, or where a resumed epoch continues), then after each training
  // batch (its backward pass and, when due, the optimizer step); for measurements. Empty: none.
  std::function<void(int64_t batches_done)> on_batch;
  // A synthetic cost per training sample, busy-waited on a loader worker before the sample is
  // built (pipeline/sample_cost.h): makes a data-bound run on demand. 0: none.
  std::chrono::microseconds sample_cost{0};
  // Errors a model raises carry LibTorch's whole message (for a TorchScript model, its
  // traceback) instead of one line.
  bool verbose = false;
  // The ranks of a distributed run (borrowed; must outlive the Trainer); null: this process
  // alone. Every rank constructs a Trainer with the same options (batch_size is per rank) and
  // calls run(): each trains on its shard of every epoch (the loader's rank and world size), the
  // parameters start from rank 0's and the gradients are averaged over the ranks every
  // optimizer step (GradientReducer), so all ranks keep the same model. Steps, samples, losses
  // and test metrics are the whole run's; a stop request on any rank stops every rank after
  // the same step. Rank 0 alone prints, writes the log, the checkpoints and the saved model;
  // every rank resumes from the checkpoint directory, which must therefore be shared (any
  // world size may resume a checkpoint).
  ProcessGroup* process_group = nullptr;
  // Receives spans (borrowed; must outlive the Trainer; null: none): category "train" on the
  // training thread — "data" (waiting for the next batch), "h2d", "forward", "backward",
  // "optimizer" (with "allreduce_wait" inside, distributed), "eval", "checkpoint" — and the
  // loaders' "pipeline" spans (LoaderOptions::tracer).
  Tracer* tracer = nullptr;
};

// Why run() returned.
enum class StopReason {
  kCompleted,      // every epoch ran
  kStepLimit,      // max_steps reached
  kStopRequested,  // *stop became true
};

// What run() did. Plain value.
struct TrainResult {
  StopReason reason = StopReason::kCompleted;
  std::vector<EpochMetrics> epochs;  // the epochs this run finished
  int64_t steps = 0;                 // optimizer steps since the run began (resumes included)
  int64_t epoch = 0;                 // 1-based epoch the run stopped in (or the last one)
  double seconds = 0;                // wall time of run()
  std::string checkpoint;            // the last checkpoint written, "" if none
  // Where the trained model went: options.save_model, or, if writing it there failed at the
  // end, a rescue copy in the temporary directory (model_error says both); "" if not saved.
  std::string model;
  Status model_error;  // ok, or why options.save_model could not be written
  // With tuned workers: the training loader's choice and why (its report as
  // run() returned); nullopt otherwise.
  std::optional<TuningReport> tuning;
};

// One training run. Not thread-safe: construct and run on one thread; only *options.stop may
// be set from elsewhere.
class Trainer {
 public:
  // Opens the data, checks the schema and every label
  // against the number of classes (the manifest's class names, else the largest label + 1),
  // builds the model, optimizer and loaders, locks the checkpoint directory (another run on it
  // is refused until run() returns) and, with resume, restores its checkpoint if it belongs to
  // this run (checkpoint.h). Throws Error naming the problem before any training happens.
  explicit Trainer(TrainerOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains until the last epoch, the step limit or a stop request. Throws Error on a data
  // error (naming the record), a non-finite loss or a failing model (naming epoch, batch, step
  // and the reason) or a failed checkpoint; the current checkpoint is then the last good one.
  // A model that cannot be saved at the end is no exception: it is saved elsewhere
  // (util/output_rescue.h) and the result says so. Call once.
  TrainResult run();

  // The model being trained; valid while the Trainer lives.
  Model& model();
  // The input shape and number of classes found in the data.
  const ModelSpec& spec() const;
  // The device the model trains on (TrainerOptions::device resolved).
  const c10::Device& device() const;
  // Training batches (forward and backward passes) in one epoch.
  int64_t batches_per_epoch() const;

 private:
  std::unique_ptr<TrainingRun> run_;
};

}  // namespace stoker
