// `stoker train`: train a classifier. Without arguments, the embedded default: Fashion-MNIST
// (converted on first use), mlp, 5 epochs, batch 64, Adam 1e-3. SIGINT/SIGTERM (and SIGHUP,
// SIGPIPE) stop at the next step boundary with a checkpoint (given --checkpoint-dir) and exit
// code 130. Under torchrun or
// srun (their variables in the environment) it is one rank of a distributed run; --nproc N
// starts N local ranks itself.
#include <fmt/format.h>
#include <signal.h>
#include <torch/cuda.h>
#include <torch/utils.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/loader_settings_options.h"
#include "cli/local_ranks.h"
#include "cli/op_trace.h"
#include "cli/output_checks.h"
#include "cli/run_output_options.h"
#include "cli/train_options.h"
#include "cli/train_report.h"
#include "cli/usage.h"
#include "stoker/distributed/launch_env.h"
#include "stoker/distributed/process_group.h"
#include "stoker/doctor/run_report.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/train/checkpoint.h"
#include "stoker/train/compute_settings.h"
#include "stoker/train/run_log.h"
#include "stoker/train/slow_configs.h"
#include "stoker/train/trainer.h"
#include "stoker/util/machine.h"

namespace stoker::cli {
namespace {

// Set by the first SIGINT/SIGTERM (a lock-free atomic store is async-signal-safe): the run
// stops at the next step boundary and writes its checkpoint. A second interrupt says on stderr
// that the run is finishing that checkpoint; a third quits at once, abandoning the checkpoint
// being written (its .partial-* directory is removed by the next run) and leaving the previous
// one current. The handler uses only atomics, write and _exit.
std::atomic<bool> stop_requested{false};
std::atomic<int> interrupts{0};

void say(const char* line) {
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line, std::strlen(line));
}

void on_stop_signal(int) {
  const int count = interrupts.fetch_add(1) + 1;
  stop_requested.store(true);
  if (count == 2) {
    say("stoker: stopping after this step, writing its checkpoint (if any) so that no progress "
        "is lost; interrupt once more to quit at once (the previous checkpoint stays current)\n");
  } else if (count >= 3) {
    say("stoker: quit at once: a checkpoint being written is abandoned, the previous one stays "
        "current\n");
    ::_exit(kExitInterrupted);
  }
}

// SIGHUP (the terminal closed) and SIGPIPE (stdout's reader gone: `train | head`) stop the run
// as a first SIGTERM does, with its checkpoint, instead of killing it between an epoch's line
// and its checkpoint. Counted once: every later write to the closed pipe raises SIGPIPE again,
// which must not count as the second and third interrupts.
void on_lost_output(int) {
  if (!stop_requested.exchange(true)) interrupts.fetch_add(1);
}

// Installed first thing, so that no line the run prints can be its last.
void install_lost_output_handlers() {
  struct sigaction lost = {};
  lost.sa_handler = on_lost_output;
  sigemptyset(&lost.sa_mask);
  sigaction(SIGHUP, &lost, nullptr);
  sigaction(SIGPIPE, &lost, nullptr);
}

void install_stop_handlers() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// LibTorch's c10d logs its own copy of the errors stoker reports (through glog, to stderr):
// keep only fatal ones, so that an error stays one line. Process-wide.
void quiet_libtorch_logs() {
#ifdef C10_USE_GLOG
  FLAGS_minloglevel = google::GLOG_FATAL;
#else
  FLAGS_caffe2_log_level = c10::GLOG_FATAL;
#endif
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

// The backend of --dist-backend `name` for a run on `device` (empty: the default device).
// UsageError for nccl where this build lacks it or the run is not on CUDA.
DistBackend dist_backend(const std::string& name, const std::string& device) {
  const bool cuda = device.empty() ? torch::cuda::is_available() : torch::Device(device).is_cuda();
  if (name.empty()) return cuda && nccl_available() ? DistBackend::kNccl : DistBackend::kGloo;
  const DistBackend backend = *kDistBackendNames.find(name);  // one_of checked the name
  if (backend == DistBackend::kNccl && !nccl_available())
    throw UsageError(
        "--dist-backend nccl: this stoker was built against a LibTorch without CUDA and NCCL "
        "(see stoker env); use gloo");
  if (backend == DistBackend::kNccl && !cuda)
    throw UsageError(
        "--dist-backend nccl carries CUDA tensors: train with --device cuda, or use "
        "gloo");
  return backend;
}

// The run's configuration as the report's facts.
std::vector<std::pair<std::string, std::string>> train_facts(const TrainerOptions& o,
                                                             const TrainFlags& flags,
                                                             int world_size, int threads,
                                                             const TrainResult& result) {
  std::vector<std::pair<std::string, std::string>> facts = {
      {"data", remote::shown_location(o.data_dir)},
      {"model", o.model},
      {"epochs", std::to_string(o.epochs)},
      {"batch", world_size > 1 ? fmt::format("{} per rank, {} ranks", o.batch_size, world_size)
                               : std::to_string(o.batch_size)},
      {"workers",
       result.tuning ? "auto: " + result.tuning->summary() : workers_text(o.loader.workers)},
      {"threads", std::to_string(threads)},
      {"device", !o.device.empty()             ? o.device
                 : torch::cuda::is_available() ? "cuda (default)"
                                               : "cpu"},
      {"amp", flags.amp}};
  if (o.accum > 1) facts.emplace_back("accum", fmt::format("{} batches per step", o.accum));
  if (o.loader.shuffle_window != kShuffleAll) {
    facts.emplace_back("shuffle window", fmt::format("{} shards", o.loader.shuffle_window));
  }
  return facts;
}

// Before any work: no output is or goes into an input, no two are one file, each takes a file
// now, and the log appended to is one.
void check_outputs(const TrainerOptions& o, const TrainFlags& flags) {
  CommandOutputs outputs(training_inputs(o));
  outputs.dir("--checkpoint-dir", o.checkpoint_dir, checkpoint_dir_names());
  outputs.dir("--report", flags.report, report_file_names());
  outputs.file("--log", o.log_path);
  outputs.file("--trace", flags.trace);
  outputs.file("--save-model", o.save_model);
  // After the collisions, which name both outputs: the log is appended to, so it must be one.
  if (!o.log_path.empty()) throw_if_error(RunLog::check(o.log_path));
}

// Error messages of a distributed run say which rank speaks.
Error with_rank(const Error& e, int rank) {
  const std::string& message = e.status().message();
  if (message.rfind("rank ", 0) == 0) return e;
  return Error(Status(e.status().code(), fmt::format("rank {}: {}", rank, message)));
}

void run_train(TrainerOptions options, const TrainFlags& flags) {
  install_lost_output_handlers();
  apply_run_flags(flags, options);
  options.eval = !flags.no_eval;
  options.stop = &stop_requested;
  options.out = stdout;
  const LaunchEnv env = read_launch_env().value_or_throw();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.dist_timeout * 1000));
  const DistBackend backend = dist_backend(flags.dist_backend, options.device);
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
    group = ProcessGroup::connect(env, timeout, backend).value_or_throw();
    options.process_group = group.get();
    if (options.data_dir.empty()) prepare_default_data(env, *group, options);
    // Each local rank its own GPU, when there are GPUs.
    if (options.device.empty() && torch::cuda::is_available()) {
      options.device = fmt::format("cuda:{}", env.local_rank % torch::cuda::device_count());
    }
    cores = std::max(1, cores / env.local_world_size);  // the host's cores shared by its ranks
  } else {
    use_default_data(options, stdout);
  }
  const int threads = apply_process_settings(flags, options, cores);
  // Rank 0 traces and reports, as it alone writes the log: the ranks run the same loop.
  const bool leads = !group || env.rank == 0;
  if (leads) check_outputs(options, flags);
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
  throw_if_error(result.model_error);
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
  add_run_options(*train, o, *flags);
  add_whole_number(*train, "--epochs", o.epochs, "Epochs to train", 1)->capture_default_str();
  CLI::Option* checkpoint_dir =
      train
          ->add_option("--checkpoint-dir", o.checkpoint_dir,
                       "Write a checkpoint here after every epoch and on SIGINT/SIGTERM")
          ->check(path_value("--checkpoint-dir"));
  CLI::Option* resume = train
                            ->add_flag("--resume", o.resume,
                                       "Continue from the checkpoint in --checkpoint-dir, if any")
                            ->needs(checkpoint_dir);
  train
      ->add_flag("--override", o.override_settings,
                 "With --resume: go on with this command's --lr, --momentum, --weight-decay, "
                 "--warmup, schedule, --amp, --clip-grad or crop options where they differ from "
                 "the checkpoint's (without it such a resume is refused)")
      ->needs(resume);
  train
      ->add_option("--log,--run-log", o.log_path,
                   "Append the run's records to this JSONL file: the run (configuration, "
                   "versions, machine), then each epoch (under torchrun, put `--` before the "
                   "program, or its own parser takes --log for its --log-dir)")
      ->check(path_value("--log"));
  CLI::Option* trace = add_trace_option(*train, flags->trace);
  train
      ->add_flag("--trace-ops", flags->trace_ops,
                 "Also trace LibTorch's operators (its profiler: slows training down)")
      ->needs(trace);
  add_report_option(*train, flags->report);
  add_whole_number(*train, "--log-every", o.log_every,
                   "Also log a record every N optimizer steps (0: none)", 0);
  train->add_flag("--no-eval", flags->no_eval, "Skip the evaluation on test/ after each epoch");
  add_whole_number(*train, "--max-steps", o.max_steps,
                   "Stop after this many optimizer steps (0: no limit)", 0);
  train
      ->add_option("--save-model", o.save_model,
                   "Write the trained model here as TorchScript, in evaluation mode: Python runs "
                   "torch.jit.load(FILE)(x), or .predict(images) on uint8 images for a built-in "
                   "model")
      ->check(path_value("--save-model"));
  add_whole_number(*train, "--nproc", flags->nproc,
                   "Start this many ranks on this host (distributed data parallel over c10d, "
                   "as torchrun would; 0 or 1: this process alone)",
                   0, 1024);
  train
      ->add_option("--dist-timeout", flags->dist_timeout,
                   "Distributed runs: seconds a rank waits for its peers before failing")
      ->check(real_number("--dist-timeout", 0, false))
      ->capture_default_str();
  add_choice(*train, "--dist-backend", flags->dist_backend,
             "Distributed runs: what carries the gradients between GPUs, {} (default: nccl when "
             "training on CUDA with a LibTorch that has it, else gloo; CPU tensors always go "
             "through gloo)",
             kDistBackendNames.names());
  train->callback([options, flags] { run_train(*options, *flags); });
}

}  // namespace stoker::cli
