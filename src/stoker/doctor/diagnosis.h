#pragma once
// The doctor's judgement: from three measurements of one training run — the loader alone, the
// compute alone, and the real loop's step-time split — a verdict naming the bottleneck, the
// numbers behind it, and changes to make, each with the gain the measurements predict.
// Pure functions of plain values (no clock, no LibTorch): `stoker doctor` (doctor.h) measures,
// this decides, and the tests decide on synthetic measurements.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/doctor/step_split.h"
#include "stoker/util/enum_names.h"

namespace stoker {

enum class Verdict {
  kDataBound,      // the device waits for the loader
  kTransferBound,  // making the input on the device (copy, normalisation) is what it waits for
  kComputeBound,   // the model's own work: the loader keeps up with room to spare
  kBalanced,       // loader and compute are close: speeding up one alone gains little
};

inline constexpr auto kVerdictNames =
    enum_names<Verdict>({{Verdict::kDataBound, "data-bound"},
                         {Verdict::kTransferBound, "transfer-bound"},
                         {Verdict::kComputeBound, "compute-bound"},
                         {Verdict::kBalanced, "balanced"}});

// kVerdictNames' name: "data-bound", "transfer-bound", "compute-bound", "balanced".
const char* to_string(Verdict verdict);

// A change to the run measured on resident batches (compute alone), for compute-bound runs.
struct ComputeProbe {
  std::string change;  // the command-line change, e.g. "--batch 128"
  std::string what;    // what it does, e.g. "twice the batch"
  double speedup = 1;  // samples/s of compute with it / without it
};

// What `stoker doctor` measured, and what it knows of the run. Rates are training batches
// (forward + backward passes) per second.
struct DoctorMeasurements {
  // The loader alone: a loop that only takes batches and makes the model input, its input-
  // making (h2d) time taken out.
  double loader_rate = 0;
  // Compute alone: forward + backward + optimizer on a batch resident on the device.
  double compute_rate = 0;
  StepSplit loop;  // the real training loop, after its warm-up
  // The loader's workers' busy time per batch, summed over workers (loader alone).
  double worker_seconds_per_batch = 0;
  // The run.
  int workers = 1;
  bool tuned = false;       // `workers` is what --workers auto chose
  int cores = 1;            // of the machine
  int compute_threads = 1;  // LibTorch intra-op threads
  bool cuda = false;
  bool encoded_images = false;  // JPEG/PNG decoded and augmented by the loader
  bool dct_scaling = false;
  bool verify_always = false;
  int64_t batch_size = 64;
  int64_t sample_cost_us = 0;  // synthetic cost per sample
  std::vector<ComputeProbe> probes;
};

// A suggested change: `action` is what to run or change, `why` the measurement behind it,
// `speedup` the predicted training throughput after it / before it (an upper bound when
// `upper_bound`: what the loop would reach if the change removed its target entirely).
struct DoctorAction {
  std::string action;
  std::string why;
  double speedup = 1;
  bool upper_bound = false;
  // "1.85x" or "up to 1.85x".
  std::string expected_gain() const;
};

struct Diagnosis {
  Verdict verdict = Verdict::kBalanced;
  std::string reason;                 // one or two sentences with the numbers behind the verdict
  double loop_rate = 0;               // the real loop's batches per second
  double wait_fraction = 0;           // of the loop's time, waiting for the loader
  double transfer_fraction = 0;       // of the loop's time, making the input on the device
  double headroom = 0;                // loader_rate / compute_rate
  std::vector<DoctorAction> actions;  // best first
};

// The verdict alone (the doctor probes compute variants only when it matters).
//   transfer-bound: input-making >= 25% of the loop and more than the wait for data;
//   data-bound: the wait for data >= 20% of the loop, or the loader alone < 0.8x compute alone;
//   compute-bound: the wait < 10% and the loader alone >= 1.5x compute alone;
//   balanced: everything between.
Verdict classify(const DoctorMeasurements& m);

// The verdict, its reason and the actions, best expected gain first.
Diagnosis diagnose(const DoctorMeasurements& m);

}  // namespace stoker
