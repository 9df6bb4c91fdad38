#pragma once
// WorkerTuner: the decision logic of `--workers auto`. Fed the loader's counters after every
// batch the consumer takes, it measures the consumer's batch rate over windows of batches and
// hill-climbs the active worker count within [1, max_workers], then the prefetch depth within
// [start, max_prefetch]; it keeps a change only if it beats the best rate so far by more than a
// noise margin (a step to FEWER workers is kept when it is not slower beyond the margin: spare
// workers take CPU from the consumer's compute), settles after a handful of windows (about 100
// batches) and stays there. It measures nothing itself and owns no thread: LoaderCore feeds it
// and applies its setting, and a test can feed it synthetic numbers. Tuning cannot change what
// is trained: batch contents never depend on the worker count (docs/DESIGN.md contract 1).
//
//   WorkerTuner tuner(options);
//   after each batch: if (tuner.on_batch(counters)) apply(tuner.workers(), tuner.prefetch());
//
// Thread-safety: none; one thread (the loader's consumer) calls it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/pipeline/tuning_report.h"

namespace stoker {

// The budgets of a tuning, where it starts and how it measures.
struct TunerOptions {
  int start_workers = 1;             // in [1, max_workers]
  int max_workers = 1;               // the CPU budget, >= 1
  int start_prefetch = 4;            // in [1, max_prefetch]
  int max_prefetch = 4;              // the memory budget; start_prefetch: the depth is not tuned
  int64_t window_batches = 12;       // batches measured per setting, >= 1
  int64_t warmup_batches = 4;        // batches after a change that are not measured, >= 0
  double min_window_seconds = 0.05;  // a window of fast batches lasts at least this long
  double margin = 0.05;              // a rate gain within this fraction is noise
  // The consumer waiting for data more than this fraction of its time: the loader is the
  // bottleneck, and more workers (or a deeper window) may help.
  double loader_bound_wait = 0.05;
};

// A loader's cumulative counters as the consumer reads them after a batch; each only grows.
struct LoaderCounters {
  double seconds = 0;       // a steady clock's reading
  double wait_seconds = 0;  // the consumer's time blocked for data so far
  double busy_seconds = 0;  // the workers' time building batches so far, summed
};

class WorkerTuner {
 public:
  // Throws Error (kInvalidArgument) for options outside their ranges.
  explicit WorkerTuner(TunerOptions options);

  // The consumer took a batch and the counters read `now`. Returns true when the setting to
  // use changed (workers(), prefetch()). Does nothing once settled.
  bool on_batch(const LoaderCounters& now);
  // The consumer paused (between epochs: evaluation, a checkpoint): the time until the next
  // on_batch is not measured.
  void pause() { have_last_ = false; }

  int workers() const { return workers_; }    // to use now
  int prefetch() const { return prefetch_; }  // to use now
  bool settled() const { return phase_ == Phase::kSettled; }
  TuningReport report() const;

 private:
  enum class Phase { kStart, kWorkersUp, kWorkersDown, kPrefetch, kSettled };

  // A window ended: records it and picks the next setting (or settles).
  void decide(const TuningTrial& trial);
  // Moves to the next candidate of the phase from the best setting (or ends the phase).
  void next_candidate();
  // Leaves the workers phases: the prefetch phase if it may help, else settles.
  void end_workers();
  bool loader_bound(const TuningTrial& t) const { return t.wait_fraction > o_.loader_bound_wait; }
  // The trial measured at (workers, prefetch), or null.
  const TuningTrial* measured(int workers, int prefetch) const;
  // Tries (workers, prefetch) next; false (nothing changes) if measured already or out of range.
  bool try_setting(int workers, int prefetch);
  void settle();

  const TunerOptions o_;
  Phase phase_ = Phase::kStart;
  int workers_;
  int prefetch_;
  int step_ = 1;          // of the current phase's moves
  int last_up_step_ = 0;  // of the last kept move up; 0: none kept
  std::vector<TuningTrial> trials_;
  size_t best_ = 0;      // index into trials_
  double top_rate_ = 0;  // the highest rate measured
  int64_t batches_ = 0;  // taken so far
  int64_t settle_batches_ = 0;
  // The window being measured.
  bool have_last_ = false;
  LoaderCounters last_;
  int64_t skip_ = 0;  // batches still to skip after a change
  int64_t window_batches_ = 0;
  LoaderCounters window_;  // sums of the differences
};

}  // namespace stoker
