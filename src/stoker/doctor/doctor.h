#pragma once
// `stoker doctor`: measures where a training run's time goes and says what limits it. For the
// run a TrainerOptions describes it sets up (training_setup.h) and steps (step_runner.h) (1) the
// loader alone (StepRunner::data_step), (2) the compute alone on a batch resident on the device
// (resident_step), (3) the real loop (train_step), each a short run after a warm-up, each traced
// (the steps' spans give the step-time split: step_split.h); when compute is what limits, (4)
// compute alone again with a variant each (twice the batch; mixed precision where the device
// has it natively). diagnosis.h turns the numbers into a verdict and actions.
//
//   stoker::TrainerOptions run;  // as for stoker train
//   stoker::DoctorResult r = stoker::run_doctor(run, {});
//   std::puts(r.to_text().c_str());
//
// No model is kept: the runs train throw-away copies. Uses the process's intra-op threads as it
// finds them and changes no process-wide state.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stoker/doctor/diagnosis.h"
#include "stoker/doctor/run_report.h"
#include "stoker/trace/tracer.h"
#include "stoker/train/trainer.h"

namespace stoker {

// How long each measured run is: past `warmup_batches` (or `warmup_seconds`, whichever ends
// first), at least `min_batches` and `min_seconds`, at most `max_seconds` or `max_batches`
// (then at least one batch).
struct DoctorOptions {
  int64_t warmup_batches = 10;
  double warmup_seconds = 3;
  int64_t min_batches = 20;
  double min_seconds = 2;
  double max_seconds = 30;
  int64_t max_batches = 100'000;  // a very fast run ends here, whatever its time
  bool probes = true;             // measure compute variants when compute is what limits
  // Records the training loop's spans (borrowed, must outlive the call); null: the doctor's
  // own. The other runs always record on Tracers of their own. Its buffers must hold
  // max_batches batches' spans (at most 5 per batch and thread): else Error.
  Tracer* tracer = nullptr;
};

// One measured run: its batches and seconds inside the measured window.
struct PhaseTiming {
  std::string name;  // "loader alone", "compute alone", "training loop", or a probe's change
  int64_t batches = 0;
  double seconds = 0;
};

struct DoctorResult {
  DoctorMeasurements measurements;
  Diagnosis diagnosis;
  std::vector<PhaseTiming> phases;
  // Samples per second over each run's time (warm-up included), a series per run.
  std::vector<ReportSeries> throughput;
  // What was measured, as label and value: data, model, batch, workers, threads, device, ...
  std::vector<std::pair<std::string, std::string>> facts;
  // What the data sources noted while measured (a damaged transcode-cache file rebuilt, ...),
  // each once.
  std::vector<std::string> notes;
  // For people: the measurements, the split (and the workers' wait for shards, if any), the
  // verdict, the actions and the sources' notes.
  std::string to_text() const;
  // One JSON object: "verdict" (data-bound, transfer-bound, compute-bound or balanced),
  // "reason", "split" (seconds per batch by part), "split_fraction", "fetch_wait" (seconds per
  // batch the loader's workers waited for shards, summed over them), the rates ("loop_rate",
  // "loader_rate", "compute_rate", batches/s), "wait_fraction", "transfer_fraction",
  // "headroom", "actions" (action, why, speedup, upper_bound, expected_gain), "phases",
  // "facts", "probes", "notes".
  std::string to_json() const;
  // The same for a --report page (run_report.h): the facts with the measured rates, the
  // verdict, the split per batch, the actions, and each measured run's throughput over time as a
  // chart.
  RunReport to_report(const std::string& command) const;
};

// Measures the run `run` describes (its data, model, loader and device; its epochs, checkpoint,
// log and evaluation are ignored: nothing is written). Throws Error as Trainer does, before any
// measurement if the run cannot start; a distributed run (process_group) is refused.
DoctorResult run_doctor(const TrainerOptions& run, const DoctorOptions& options);

}  // namespace stoker
