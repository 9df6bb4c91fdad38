#pragma once
// TuningReport: what a tuned loader (WorkerCount::tuned()) chose and why, as
// LoaderCore::tuning() says it; the tuner itself is private (worker_tuner.h).

#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

// One setting and what it measured.
struct TuningTrial {
  int workers = 0;
  int prefetch = 0;
  double batches_per_s = 0;  // as the consumer took them
  double wait_fraction = 0;  // of the consumer's time, blocked for data
  double busy_fraction = 0;  // of the active workers' time, building batches
};

// What a tuning chose and why. Plain value.
struct TuningReport {
  int workers = 0;   // chosen (while not settled: in use)
  int prefetch = 0;  // chosen (while not settled: in use)
  int max_workers = 0;
  int max_prefetch = 0;
  bool settled = false;
  int64_t settle_batches = 0;       // batches taken until it settled (so far, while not)
  std::vector<TuningTrial> trials;  // in the order measured; the first is the start
  // One line with the measured rates, e.g. "2 workers: 1,850 batches/s vs 1,020 with 1 worker
  // (the start); slower or no gain beyond 5%: 3 workers (1,870); the consumer waited for data
  // 31% of its time". Empty before the first measurement.
  std::string reason;

  // One line for people: "REASON; settled after 33 batches (prefetch 4)", or "not settled
  // after N batches (using ...); so far REASON" while it is not.
  std::string summary() const;
  // A JSON object of these fields ("trials": objects of TuningTrial's fields), for --json
  // outputs and logs.
  std::string to_json() const;
};

}  // namespace stoker
