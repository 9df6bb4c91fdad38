// `stoker bench train`: the classic experiment side by side in one run — MLP 784-128-64-10,
// Fashion-MNIST train, batch 64, Adam 1e-3, one epoch — through PyTorch's DataLoader
// (bench/torch_train_baseline.py with the build's Python (STOKER_PYTHON): num_workers 0, 2, 2 +
// pin_memory), through stoker, and the compute-only bound (one resident batch; also 16 resident
// batches cycled, what a step costs when its batch is not the one it just used). Seconds and
// ratios.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/baseline_paths.h"
#include "cli/commands.h"
#include "cli/compute_bound.h"
#include "cli/loader_settings_options.h"
#include "cli/train_options.h"
#include "cli/usage.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/train/compute_settings.h"
#include "stoker/train/trainer.h"
#include "stoker/util/machine.h"
#include "stoker/util/sample_stats.h"
#include "stoker/util/slice_timer.h"
#include "stoker/util/subprocess.h"

namespace stoker::cli {
namespace {

struct TrainBenchOptions {
  int64_t batch = 64;
  LoaderSettings loader = training_loader_settings();
  int threads = 1;
  std::string torch_script = default_baseline_script();
  std::string python = default_baseline_python();
  int repeat = 11;
  bool skip_torch = false;
  bool json = false;
};

// PyTorch's results, or {"error": "skipped (--no-torch)"}. The baseline runs without a shell:
// --python and the script path are one argument each, whatever they hold. Throws Error if it
// cannot run or fails, before any timing starts: a comparison without it is not what was asked.
nlohmann::json run_torch_baseline(const TrainBenchOptions& o) {
  if (o.skip_torch) return {{"error", "skipped (--no-torch)"}};
  if (!std::filesystem::exists(o.torch_script))
    throw Error(not_found("PyTorch baseline " + o.torch_script +
                          ": no such file (pass --torch-baseline, or --no-torch)"));
  const std::vector<std::string> argv = {
      o.python,    o.torch_script,           "--json", "--batch", std::to_string(o.batch),
      "--threads", std::to_string(o.threads)};
  const ProcessResult r = run_process(argv).value_or_throw();
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (r.exit_code == 0 && !j.is_discarded() && j.contains("results")) return j;
  std::string reason = r.err;
  while (!reason.empty() && reason.back() == '\n') reason.pop_back();
  reason = reason.substr(reason.rfind('\n') == std::string::npos ? 0 : reason.rfind('\n') + 1);
  throw Error(
      io_error(fmt::format("the PyTorch baseline failed: {} {} {}: {}", o.python, o.torch_script,
                           r.exit_code != 0 ? fmt::format("exited with status {}", r.exit_code)
                                            : std::string("printed no results"),
                           reason.empty() ? "no message" : reason)));
}

// Resident batches the second compute-only run cycles through: 16 of batch 64 are 3.2 MB, more
// than a core's L2, so each step reads its batch from further away, as it does from a loader.
constexpr int64_t kFreshBatches = 16;

// Slices each timed epoch is cut into for the quiet-machine estimate (util/slice_timer.h): at
// batch 64 one slice is ~94 steps, ~60 ms, shorter than the busy spells of this kind of VM.
constexpr int kSlices = 10;

// The timed epochs of one side of the comparison.
struct Series {
  std::vector<double> seconds;
  std::vector<std::vector<double>> slices;
  double quiet() const { return quiet_floor(slices); }
};

void run_train_bench(const TrainBenchOptions& o) {
  convert_default_data(default_fashion_mnist_dir(), nullptr);
  set_compute_settings(o.threads);  // for stoker's runs and the compute-only bound alike
  nlohmann::json torch_results = run_torch_baseline(o);

  TrainerOptions options;
  options.epochs = 1;
  options.batch_size = o.batch;
  options.loader = o.loader;
  options.eval = false;
  options.out = nullptr;
  options.schedule.kind = ScheduleKind::kConstant;  // the classic recipe, as the baseline runs it
  ModelSpec spec;
  int64_t steps = 0;
  {
    const Trainer probe(options);
    spec = probe.spec();
    steps = probe.batches_per_epoch();
  }

  // stoker's epoch and the bound alternate, so that each pair sees the same machine; the rows
  // show medians, and stoker/bound is the median of the pairs' ratios.
  Series stoker, bound, cycled;
  std::vector<double> wait_s, pair_ratio;
  // Hooks for both sides: 0 restarts the timer where the timed run begins.
  auto slice_hook = [](SliceTimer& timer) {
    return [&timer](int64_t done) {
      if (done == 0) {
        timer.restart();
      } else {
        timer.step_done(done);
      }
    };
  };
  auto run_stoker = [&] {
    SliceTimer timer(steps, kSlices);
    TrainerOptions timed = options;
    timed.on_batch = slice_hook(timer);
    Trainer trainer(timed);
    const EpochMetrics epoch = trainer.run().epochs.at(0);
    stoker.seconds.push_back(epoch.seconds);
    stoker.slices.push_back(timer.seconds());
    wait_s.push_back(epoch.data_seconds);
  };
  auto run_compute_only = [&](Series& series, int64_t distinct_batches) {
    SliceTimer timer(steps, kSlices);
    series.seconds.push_back(compute_only_seconds("mlp", spec, options.optimizer, o.batch, steps,
                                                  options.seed, distinct_batches,
                                                  slice_hook(timer)));
    series.slices.push_back(timer.seconds());
  };
  for (int r = 0; r < o.repeat; ++r) {
    // Pairs take turns at going first (stoker-bound, bound-stoker, ...), so that whatever the
    // first run of a pair pays or gains (drift, a warm heap) falls on both sides equally.
    if (r % 2 == 0) {
      run_stoker();
      run_compute_only(bound, 1);
    } else {
      run_compute_only(bound, 1);
      run_stoker();
    }
    run_compute_only(cycled, kFreshBatches);
    pair_ratio.push_back(stoker.seconds.back() / bound.seconds.back());
  }
  const double stoker_s = median(stoker.seconds);
  const double bound_s = median(bound.seconds);
  const double stoker_over_bound = median(pair_ratio);
  const auto [ratio_low, ratio_high] = median_interval_95(pair_ratio);
  const double coverage = median_interval_coverage(pair_ratio.size());
  // Noise on a shared machine only ever adds time: the ratio of the best runs, and the ratio of
  // quiet-machine times (each slice's fastest run), are the other usual estimates.
  const double best_ratio = *std::min_element(stoker.seconds.begin(), stoker.seconds.end()) /
                            *std::min_element(bound.seconds.begin(), bound.seconds.end());
  const double quiet_ratio = stoker.quiet() / bound.quiet();

  nlohmann::json rows = nlohmann::json::array();
  if (torch_results.contains("results")) {
    for (const auto& r : torch_results["results"]) {
      rows.push_back({{"name", "pytorch " + r["name"].get<std::string>()},
                      {"seconds", r["seconds"]},
                      {"data_wait_s", r.value("data_wait_s", 0.0)}});
    }
  }
  rows.push_back({{"name", "stoker"},
                  {"seconds", stoker_s},
                  {"quiet_seconds", stoker.quiet()},
                  {"data_wait_s", median(wait_s)}});
  rows.push_back({{"name", "stoker compute-only bound"},
                  {"seconds", bound_s},
                  {"quiet_seconds", bound.quiet()},
                  {"data_wait_s", 0.0}});
  rows.push_back({{"name", fmt::format("compute only, {} batches cycled", kFreshBatches)},
                  {"seconds", median(cycled.seconds)},
                  {"quiet_seconds", cycled.quiet()},
                  {"data_wait_s", 0.0}});
  for (auto& r : rows) {
    r["ratio_to_stoker"] = r["seconds"].get<double>() / stoker_s;
    r["ratio_to_bound"] = r["seconds"].get<double>() / bound_s;
  }
  nlohmann::json j = {{"batch", o.batch},
                      {"workers", workers_text(o.loader.workers)},
                      {"threads", o.threads},
                      {"steps", steps},
                      {"repeat", o.repeat},
                      {"results", rows},
                      {"stoker_over_bound", stoker_over_bound},
                      {"stoker_over_bound_interval", {ratio_low, ratio_high}},
                      {"stoker_over_bound_interval_coverage", coverage},
                      {"stoker_over_bound_each", pair_ratio},
                      {"stoker_over_bound_best", best_ratio},
                      {"stoker_over_bound_quiet", quiet_ratio}};
  if (torch_results.contains("error")) j["pytorch_error"] = torch_results["error"];
  if (o.json) {
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{:<34} {:>9} {:>9} {:>10} {:>9} {:>9}\n",
             "one epoch, mlp, batch " + std::to_string(o.batch), "seconds", "quiet", "data wait",
             "/ stoker", "/ bound");
  for (const auto& r : rows) {
    fmt::print(
        "{:<34} {:>9.3f} {:>9} {:>10.3f} {:>9.2f} {:>9.2f}\n", r["name"].get<std::string>(),
        r["seconds"].get<double>(),
        r.contains("quiet_seconds") ? fmt::format("{:.3f}", r["quiet_seconds"].get<double>()) : "",
        r["data_wait_s"].get<double>(), r["ratio_to_stoker"].get<double>(),
        r["ratio_to_bound"].get<double>());
  }
  fmt::print(
      "stoker / bound: median of {} pairs {:.3f} ({:.1f}% confidence interval {:.3f}-{:.3f}); "
      "quiet machine {:.3f}; best / best {:.3f}\n  each pair: {:.3f}\n"
      "  (seconds: medians; quiet: the sum over {} slices of an epoch of each slice's fastest "
      "run)\n",
      o.repeat, stoker_over_bound, 100 * coverage, ratio_low, ratio_high, quiet_ratio, best_ratio,
      fmt::join(pair_ratio, ", "), kSlices);
  if (torch_results.contains("error"))
    fmt::print("pytorch baseline: {}\n", torch_results["error"].get<std::string>());
}

}  // namespace

void add_bench_train_command(CLI::App& bench) {
  auto o = std::make_shared<TrainBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "train",
      "The classic MLP experiment: PyTorch DataLoader vs stoker vs the compute-only bound");
  add_whole_number(*cmd, "--batch", o->batch, "Batch size", 1)->capture_default_str();
  add_loader_settings_options(*cmd, o->loader,
                              {"stoker loader worker threads (auto: tuned during the run)",
                               /*per_core=*/false, /*verify=*/false});
  add_whole_number(*cmd, "--threads", o->threads, "Intra-op threads (both sides)", 1,
                   machine_cores(), "the cores of this machine")
      ->capture_default_str();
  cmd->add_option("--torch-baseline", o->torch_script, "PyTorch baseline script")
      ->capture_default_str();
  cmd->add_option("--python", o->python, "Python with torch and torchvision")
      ->capture_default_str();
  add_whole_number(*cmd, "--repeat", o->repeat, "stoker epochs and bounds, run alternately", 1, 100)
      ->capture_default_str();
  cmd->add_flag("--no-torch", o->skip_torch, "Leave out the PyTorch runs");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] { run_train_bench(*o); });
}

}  // namespace stoker::cli
