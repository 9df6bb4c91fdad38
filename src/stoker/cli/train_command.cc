// `stoker train`: train a classifier. Without arguments, the embedded default: Fashion-MNIST
// (converted on first use), mlp, 5 epochs, batch 64, Adam 1e-3. SIGINT/SIGTERM stop at the next
// step boundary with a checkpoint (given --checkpoint-dir) and exit code 130. Under torchrun or
// srun (their variables in the environment) it is one rank of a distributed run; --nproc N
// starts N local ranks itself.
#include <fmt/format.h>
#include <signal.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/local_ranks.h"
#include "cli/report_option.h"
#include "cli/trace_option.h"
#include "cli/train_report.h"
#include "cli/usage.h"
#include "cli/workers_option.h"
#include "stoker/dist/launch_env.h"
#include "stoker/dist/process_group.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/train/compute_threads.h"
#include "stoker/train/op_trace.h"
#include "stoker/train/slow_configs.h"
#include "stoker/train/trainer.h"
#include "stoker/util/machine.h"

namespace stoker::cli {
namespace {

// Set by the first SIGINT/SIGTERM (a lock-free atomic store is async-signal-safe); the
// handler resets itself, so a second signal ends the process at once.
std::atomic<bool> stop_requested{false};

void on_stop_signal(int) { stop_requested.store(true); }

void install_stop_handlers() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// Command-line values that are parsed into TrainerOptions fields of other types.
struct TrainFlags {
  std::string schedule = "cosine";
  std::string amp = "off";
  std::string verify = "once";
  double weight_decay = -1;  // < 0: the optimizer's default
  bool no_eval = false;
  bool no_dct_scale = false;
  int threads = 0;  // compute threads; 0: the cores the loader's workers leave
  int nproc = 0;    // local ranks to start; 0 or 1: this process
  double dist_timeout = kDefaultDistTimeout.count();  // seconds
  std::string trace;                                  // --trace: rank 0's Chrome trace
  bool trace_ops = false;                             // --trace-ops: LibTorch's operators too
  std::string report;                                 // --report: rank 0's report directory
};

// LibTorch's c10d logs its own copy of the errors stoker reports (through glog, to stderr):
// keep only fatal ones, so that an error stays one line. Process-wide.
void quiet_libtorch_logs() {
#ifdef C10_USE_GLOG
  FLAGS_minloglevel = google::GLOG_FATAL;
#else
  FLAGS_caffe2_log_level = c10::GLOG_FATAL;
#endif
}

// Converts the default data (Fashion-MNIST) into `dir` unless it is there, saying so on `say`
// (null: silently).
void convert_default_data(const std::string& dir, std::FILE* say) {
  if (fashion_mnist_converted(dir)) return;
  if (say)
    fmt::print(say, "converting Fashion-MNIST from {} into {}\n", kFashionMnistDebianDir, dir);
  throw_if_error(convert_fashion_mnist(kFashionMnistDebianDir, dir, /*skip_existing=*/true));
}

// The default data made ready before the ranks open it: rank 0 converts, then the first rank
// of every other host (in case the data's directory is not shared), so that no two ranks write
// it at once.
void prepare_default_data(const LaunchEnv& env, ProcessGroup& group, TrainerOptions& options) {
  options.data_dir = default_fashion_mnist_dir();
  for (bool first : {true, false}) {
    if (first ? env.rank == 0 : env.local_rank == 0 && env.rank != 0)
      convert_default_data(options.data_dir, env.rank == 0 ? stdout : nullptr);
    throw_if_error(group.barrier());
  }
}

// The run's configuration as the report's facts.
std::vector<std::pair<std::string, std::string>> train_facts(const TrainerOptions& o,
                                                             const TrainFlags& flags,
                                                             int world_size, int threads,
                                                             const TrainResult& result) {
  std::vector<std::pair<std::string, std::string>> facts = {
      {"data", o.data_dir},
      {"model", o.model},
      {"epochs", std::to_string(o.epochs)},
      {"batch", world_size > 1 ? fmt::format("{} per rank, {} ranks", o.batch_size, world_size)
                               : std::to_string(o.batch_size)},
      {"workers", result.tuning ? "auto: " + result.tuning->summary() : workers_text(o.workers)},
      {"threads", std::to_string(threads)},
      {"device", !o.device.empty()             ? o.device
                 : torch::cuda::is_available() ? "cuda (default)"
                                               : "cpu"},
      {"amp", flags.amp}};
  if (o.accum > 1) facts.emplace_back("accum", fmt::format("{} batches per step", o.accum));
  return facts;
}

// Error messages of a distributed run say which rank speaks.
Error with_rank(const Error& e, int rank) {
  const std::string& message = e.status().message();
  if (message.rfind("rank ", 0) == 0) return e;
  return Error(Status(e.status().code(), fmt::format("rank {}: {}", rank, message)));
}

// --model: a built-in name or a TorchScript file.
CLI::Validator model_name() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        const std::vector<std::string> builtin = {"mlp", "cnn", "resnet18"};
        if (std::find(builtin.begin(), builtin.end(), name) != builtin.end() ||
            (name.size() > 3 && name.compare(name.size() - 3, 3, ".pt") == 0))
          return "";
        const std::string near = closest_match(name, builtin);
        throw UsageError(fmt::format(
            "--model: unknown model '{}' ({}choose mlp, cnn, resnet18 or a TorchScript file "
            "ending in .pt)",
            name, near.empty() ? "" : "did you mean '" + near + "'? "));
      },
      "", "model_name");
}

void run_train(TrainerOptions options, const TrainFlags& flags) {
  options.schedule.kind = parse_schedule_kind(flags.schedule).value_or_throw();
  options.amp = parse_amp_mode(flags.amp).value_or_throw();
  options.verify = parse_verify_policy(flags.verify).value_or_throw();
  if (flags.weight_decay >= 0) options.optimizer.weight_decay = flags.weight_decay;
  options.eval = !flags.no_eval;
  options.dct_scaling = !flags.no_dct_scale;
  options.stop = &stop_requested;
  options.out = stdout;
  const LaunchEnv env = read_launch_env().value_or_throw();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.dist_timeout * 1000));
  if (flags.nproc > 1) {
    if (env.distributed()) {
      throw UsageError(fmt::format(
          "--nproc: this process is already rank {} of {} ({} started it): leave --nproc out",
          env.rank, env.world_size, to_string(env.launcher)));
    }
    // The ranks notice a failed peer within the timeout; a little more, then they are stopped.
    const int code = run_local_ranks(without_nproc(command_arguments()), flags.nproc,
                                     timeout + std::chrono::seconds(10));
    if (code != 0) throw ExitCode(code);
    return;
  }
  std::unique_ptr<ProcessGroup> group;
  int cores = machine_cores();
  if (env.distributed()) {
    quiet_libtorch_logs();
    group = ProcessGroup::connect(env, timeout).value_or_throw();
    options.process_group = group.get();
    if (options.data_dir.empty()) prepare_default_data(env, *group, options);
    // Each local rank its own GPU, when there are GPUs.
    if (options.device.empty() && torch::cuda::is_available()) {
      options.device = fmt::format("cuda:{}", env.local_rank % torch::cuda::device_count());
    }
    cores = std::max(1, cores / env.local_world_size);  // the host's cores shared by its ranks
  } else if (options.data_dir.empty()) {
    options.data_dir = default_fashion_mnist_dir();
    convert_default_data(options.data_dir, stdout);
  }
  // The process-wide settings the library leaves to its caller: compute threads, and the seed
  // of anything random outside the model's initialisation (a TorchScript model's dropout).
  // --workers auto starts from one worker (and may take more while it tunes): the compute
  // threads are those one worker leaves, as with the default.
  const int threads = resolve_compute_threads(
      flags.threads, options.workers == kAutoTuneWorkers ? 1 : options.workers, cores);
  set_compute_threads(threads);
  torch::manual_seed(options.seed);
  // Rank 0 traces and reports, as it alone writes the log: the ranks run the same loop.
  const bool leads = !group || env.rank == 0;
  const std::unique_ptr<Tracer> tracer = make_tracer(leads ? flags.trace : "");
  options.tracer = tracer.get();
  const std::string report_dir = leads ? flags.report : "";
  check_report_option(report_dir);
  const int world_size = group ? env.world_size : 1;
  TrainReportRecorder report(options.batch_size * world_size, options.accum);
  if (!report_dir.empty()) options.on_batch = [&report](int64_t b) { report.on_batch(b); };
  TrainResult result;
  try {
    Trainer trainer(options);
    install_stop_handlers();
    const OpTrace ops(flags.trace_ops ? tracer.get() : nullptr);
    result = trainer.run();
  } catch (const Error& e) {
    if (group) throw with_rank(e, env.rank);
    throw;
  }
  // Written after the Trainer (and its loaders' workers) ended, also for an interrupted run.
  write_trace(tracer.get(), flags.trace);
  if (!report_dir.empty())
    write_report_option(
        report.report(result, train_facts(options, flags, world_size, threads, result)),
        report_dir);
  if (result.reason == StopReason::kStopRequested && group && env.rank != 0) {
    throw Error(
        Status(StatusCode::kCancelled, fmt::format("rank {}: interrupted in epoch {} after step {}",
                                                   env.rank, result.epoch, result.steps)));
  }
  if (result.reason == StopReason::kStopRequested) {
    const std::string saved = result.checkpoint.empty()
                                  ? "no --checkpoint-dir, nothing saved"
                                  : "checkpoint " + result.checkpoint + " (continue with --resume)";
    throw Error(
        Status(StatusCode::kCancelled, fmt::format("interrupted in epoch {} after step {}; {}",
                                                   result.epoch, result.steps, saved)));
  }
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto options = std::make_shared<TrainerOptions>();
  auto flags = std::make_shared<TrainFlags>();
  TrainerOptions& o = *options;
  CLI::App* train = app.add_subcommand(
      "train", "Train a classifier (default: mlp on Fashion-MNIST, 5 epochs, batch 64, Adam 1e-3)");
  train->add_option("--data", o.data_dir,
                    "A folder with train/ and test/ (or val/) datasets, or one dataset (trained "
                    "on, not evaluated) (default: Fashion-MNIST, converted into $STOKER_DATA or "
                    "~/.cache/stoker on first use)");
  train->add_option("--model", o.model, "mlp, cnn, resnet18, or a TorchScript file (.pt)")
      ->check(model_name())
      ->capture_default_str();
  add_whole_number(*train, "--epochs", o.epochs, "Epochs to train", 1)->capture_default_str();
  add_whole_number(*train, "--batch", o.batch_size, "Batch size", 1)->capture_default_str();
  train->add_option("--optimizer", o.optimizer.name, "sgd, adam or adamw")
      ->check(one_of("--optimizer", {"sgd", "adam", "adamw"}))
      ->capture_default_str();
  train->add_option("--lr", o.optimizer.lr, "Learning rate (peak lr of the schedule)")
      ->check(real_number("--lr", 0, false))
      ->capture_default_str();
  train->add_option("--momentum", o.optimizer.momentum, "SGD momentum, in [0, 1)")
      ->check(real_number("--momentum", 0, true));
  train->add_flag("--nesterov", o.optimizer.nesterov, "SGD with Nesterov momentum");
  train
      ->add_option("--weight-decay", flags->weight_decay,
                   "Weight decay (default: 0 for sgd and adam, 0.01 for adamw)")
      ->check(real_number("--weight-decay", 0, true));
  train->add_option("--schedule", flags->schedule, "constant, step, cosine or one-cycle")
      ->check(one_of("--schedule", {"constant", "step", "cosine", "one-cycle"}))
      ->capture_default_str();
  add_whole_number(*train, "--warmup", o.schedule.warmup_steps, "Linear warm-up steps", 0)
      ->capture_default_str();
  add_whole_number(*train, "--step-size", o.schedule.step_size,
                   "step schedule: steps between decays", 1);
  train->add_option("--gamma", o.schedule.gamma, "step schedule: decay factor")
      ->check(real_number("--gamma", 0, false));
  train->add_option("--min-lr", o.schedule.min_lr, "cosine and one-cycle: final lr")
      ->check(real_number("--min-lr", 0, true));
  train->add_option("--amp", flags->amp, "Mixed precision: off, bf16 (CPU or CUDA), fp16 (CUDA)")
      ->check(one_of("--amp", {"off", "bf16", "fp16"}))
      ->capture_default_str();
  add_whole_number(*train, "--accum", o.accum, "Batches per optimizer step (gradient accumulation)",
                   1)
      ->capture_default_str();
  train->add_option("--clip-grad", o.clip_grad, "Clip the gradient norm to this (0: off)")
      ->check(real_number("--clip-grad", 0, true))
      ->capture_default_str();
  add_whole_number(
      *train, "--threads", flags->threads,
      "LibTorch intra-op threads (default 0: the cores the loader's workers leave; with "
      "--workers auto, those one worker leaves)",
      0, machine_cores(), "the cores of this machine")
      ->capture_default_str();
  train->add_option("--device", o.device, "cpu, cuda or cuda:N (default: cuda if available)")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            const bool cuda_n = name.rfind("cuda:", 0) == 0 && name.size() > 5 &&
                                name.find_first_not_of("0123456789", 5) == std::string::npos;
            if (name == "cpu" || name == "cuda" || cuda_n) return "";
            throw UsageError("--device: unknown device '" + name +
                             "' (choose cpu, cuda or cuda:N)");
          },
          "", "device"));
  add_workers_option(*train, o.workers,
                     "Loader worker threads (0: build batches inline; auto: tuned during about "
                     "the first 100 steps, from 1 up to the machine's cores)",
                     0)
      ->capture_default_str();
  train
      ->add_option("--verify", flags->verify,
                   "Record checksums: once (first read, default), always, off")
      ->check(one_of("--verify", {"always", "once", "off"}))
      ->capture_default_str();
  add_whole_number(*train, "--seed", o.seed, "Seed of model initialisation and data order", 0)
      ->capture_default_str();
  train
      ->add_option("--mean", o.mean,
                   "Per-channel input mean in [0, 1] units (default: the training data's, from "
                   "its manifest; for data converted by an older stoker, ImageNet's for JPEG/PNG "
                   "datasets and Fashion-MNIST's 0.2860 for stored pixels)")
      ->check(real_number("--mean", std::numeric_limits<double>::lowest(), true));
  train
      ->add_option("--std", o.std,
                   "Per-channel input standard deviation (default: the training data's; without "
                   "statistics, ImageNet's or 0.3530)")
      ->check(real_number("--std", 0, false));
  train
      ->add_option("--image-size", o.image_size,
                   "JPEG/PNG datasets: side of the square crops the model sees")
      ->check(whole_number("--image-size", 1, 4096))
      ->capture_default_str();
  train
      ->add_option("--crop-scale", o.augment.crop.scale_min,
                   "RandomResizedCrop: smallest crop, as a fraction of the image's area")
      ->check(real_number("--crop-scale", 0, false, 1))
      ->capture_default_str();
  train
      ->add_option("--crop-ratio-min", o.augment.crop.ratio_min,
                   "RandomResizedCrop: smallest aspect ratio (width / height)")
      ->check(real_number("--crop-ratio-min", 0, false))
      ->capture_default_str();
  train
      ->add_option("--crop-ratio-max", o.augment.crop.ratio_max,
                   "RandomResizedCrop: largest aspect ratio")
      ->check(real_number("--crop-ratio-max", 0, false))
      ->capture_default_str();
  train
      ->add_option("--flip", o.augment.flip_probability,
                   "Probability of a horizontal flip of a training image")
      ->check(real_number("--flip", 0, true, 1))
      ->capture_default_str();
  CLI::Option* checkpoint_dir =
      train->add_option("--checkpoint-dir", o.checkpoint_dir,
                        "Write a checkpoint here after every epoch and on SIGINT/SIGTERM");
  train->add_flag("--resume", o.resume, "Continue from the checkpoint in --checkpoint-dir, if any")
      ->needs(checkpoint_dir);
  train->add_option("--log", o.log_path,
                    "Append the run's records to this JSONL file: the run (configuration, "
                    "versions, machine), then each epoch");
  CLI::Option* trace = add_trace_option(*train, flags->trace);
  train
      ->add_flag("--trace-ops", flags->trace_ops,
                 "Also trace LibTorch's operators (its profiler: slows training down)")
      ->needs(trace);
  add_report_option(*train, flags->report);
  add_whole_number(*train, "--log-every", o.log_every,
                   "Also log a record every N optimizer steps (0: none)", 0);
  train->add_flag("--no-eval", flags->no_eval, "Skip the evaluation on test/ after each epoch");
  train->add_flag("--no-dct-scale", flags->no_dct_scale,
                  "JPEG/PNG datasets: never decode at a reduced DCT scale (torchvision's pixels "
                  "exactly; slower)");
  train->add_flag("--verbose", o.verbose,
                  "Errors a model raises in full (a TorchScript model's traceback)");
  add_whole_number(*train, "--max-steps", o.max_steps,
                   "Stop after this many optimizer steps (0: no limit)", 0);
  train->add_option("--save-model", o.save_model,
                    "Write the trained model here as TorchScript, in evaluation mode: Python runs "
                    "torch.jit.load(FILE)(x), or .predict(images) on uint8 images for a built-in "
                    "model");
  add_whole_number(*train, "--nproc", flags->nproc,
                   "Start this many ranks on this host (distributed data parallel over c10d, "
                   "as torchrun would; 0 or 1: this process alone)",
                   0, 1024);
  train
      ->add_option("--dist-timeout", flags->dist_timeout,
                   "Distributed runs: seconds a rank waits for its peers before failing")
      ->check(real_number("--dist-timeout", 0, false))
      ->capture_default_str();
  train->callback([options, flags] { run_train(*options, *flags); });
}

}  // namespace stoker::cli
