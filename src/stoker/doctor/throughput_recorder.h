#pragma once
// ThroughputRecorder: samples per second over time, the points of a report's throughput chart.
// Fed with a running count of samples, it adds a point (seconds since the first count, samples/s
// over the interval since the previous point) once the interval is long enough: at least
// `min_interval` seconds and 1% of the time so far, so that a long run keeps a few hundred
// points. Not thread-safe: feed it from one thread.

#include <cstdint>
#include <functional>
#include <vector>

#include "stoker/doctor/run_report.h"

namespace stoker {

class ThroughputRecorder {
 public:
  // Seconds on a monotonic clock.
  using Clock = std::function<double()>;

  // The steady clock's seconds.
  static double steady_seconds();

  // On the steady clock, a point every 0.05 s at least.
  ThroughputRecorder() : ThroughputRecorder(steady_seconds) {}
  explicit ThroughputRecorder(Clock clock, double min_interval = 0.05);

  // Starts an interval at `samples`, now, without adding a point: after a pause that is not
  // throughput (evaluation between epochs). The first call (or record()) also sets time zero.
  void restart(int64_t samples);
  // `samples` processed so far (not less than the last count); adds a point when one is due.
  void record(int64_t samples);

  const std::vector<ReportPoint>& points() const { return points_; }

 private:
  Clock clock_;
  double min_interval_;
  bool started_ = false;
  double start_ = 0;      // time zero
  double last_time_ = 0;  // where the current interval began
  int64_t last_samples_ = 0;
  std::vector<ReportPoint> points_;
};

}  // namespace stoker
