#pragma once
// Times a run of steps in equal slices, for estimates that see through a noisy machine: the
// same slice of several runs is timed several times, and its fastest time is the one least
// disturbed by other work (noise on a shared machine only ever adds time).

#include <chrono>
#include <cstdint>
#include <vector>

namespace stoker {

class SliceTimer {
 public:
  // A run of `total_steps` (>= 1) steps cut into `slices` (>= 1, clamped to total_steps)
  // parts of near-equal step counts. The clock starts now.
  SliceTimer(int64_t total_steps, int slices);
  // Restarts the clock and forgets finished slices: call where the timed run begins.
  void restart();
  // Call after step `steps_done` (1-based, increasing); ends every slice whose boundary it
  // reached.
  void step_done(int64_t steps_done);
  // Seconds of each finished slice, in order.
  const std::vector<double>& seconds() const { return seconds_; }

 private:
  int64_t total_steps_;
  int slices_;
  std::chrono::steady_clock::time_point slice_start_;
  std::vector<double> seconds_;
};

// The quiet-machine time of a run: the sum over slices of the fastest time of that slice
// across `runs` (each a SliceTimer::seconds() of the same run length and slicing).
// Throws std::invalid_argument if runs is empty, a run has no slices, or slice counts differ.
double quiet_floor(const std::vector<std::vector<double>>& runs);

}  // namespace stoker
