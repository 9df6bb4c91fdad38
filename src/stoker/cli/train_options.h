#pragma once
// The options that describe a training run, shared by `stoker train` and `stoker doctor` (which
// measures the run `train` would make with the same arguments): what to train on and how, the
// loader, the device. `train` adds what a run leaves behind (epochs, checkpoints, logs, the
// saved model) and how it is launched (--nproc). Stateless functions.

#include <cstdio>
#include <string>

#include "stoker/distributed/process_group.h"
#include "stoker/train/trainer.h"

namespace CLI {
class App;
}

namespace stoker::cli {

// Command-line values that are parsed into TrainerOptions fields of other types.
struct TrainFlags {
  int sample_cost_us = 0;  // --sample-cost-us
  std::string schedule = "cosine";
  std::string amp = "off";
  double weight_decay = -1;  // < 0: the optimizer's default
  bool no_eval = false;
  bool dct_scaling = false;
  std::string auto_augment;  // --auto-augment: a policy before the --augment operations
  int threads = 0;           // compute threads; 0: the cores the loader's workers leave
  int nproc = 0;             // local ranks to start; 0 or 1: this process
  double dist_timeout = kDefaultDistTimeout.count();  // seconds
  std::string dist_backend;  // --dist-backend; empty: nccl for CUDA where this build has it
  std::string trace;         // --trace: rank 0's Chrome trace
  bool trace_ops = false;    // --trace-ops: LibTorch's operators too
  std::string report;        // --report: rank 0's report directory
};

// Registers the run's options on `command`, their values into `options` and `flags`.
void add_run_options(CLI::App& command, TrainerOptions& options, TrainFlags& flags);

// Sets the TrainerOptions fields that `flags` holds in other types, then checks the options
// that must agree with each other (--min-lr and --lr, --crop-ratio-min and -max, --momentum
// and --optimizer). Throws Error, or UsageError naming the options that disagree.
void apply_run_flags(const TrainFlags& flags, TrainerOptions& options);

// Converts the default data (Fashion-MNIST) into `dir` unless it is there, saying so on `say`
// (null: silently). Throws Error.
void convert_default_data(const std::string& dir, std::FILE* say);

// No --data: the default data (Fashion-MNIST), converted on first use (said on `say`). Throws
// Error.
void use_default_data(TrainerOptions& options, std::FILE* say);

// The process-wide settings the library leaves to its caller: the compute threads (--threads,
// else the `cores` the loader's workers leave; with --workers auto, which starts from one
// worker, those one worker leaves) and the seed of anything random outside the model's
// initialisation (a TorchScript model's dropout). Returns the compute threads.
int apply_process_settings(const TrainFlags& flags, const TrainerOptions& options, int cores);

}  // namespace stoker::cli
