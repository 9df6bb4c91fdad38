#include "stoker/util/slice_timer.h"

#include <algorithm>
#include <stdexcept>

namespace stoker {

SliceTimer::SliceTimer(int64_t total_steps, int slices)
    : total_steps_(std::max<int64_t>(total_steps, 1)),
      slices_(static_cast<int>(std::clamp<int64_t>(slices, 1, total_steps_))),
      slice_start_(std::chrono::steady_clock::now()) {}

void SliceTimer::restart() {
  seconds_.clear();
  slice_start_ = std::chrono::steady_clock::now();
}

void SliceTimer::step_done(int64_t steps_done) {
  const auto now = std::chrono::steady_clock::now();
  while (static_cast<int64_t>(seconds_.size()) < slices_ &&
         steps_done >= total_steps_ * static_cast<int64_t>(seconds_.size() + 1) / slices_) {
    seconds_.push_back(std::chrono::duration<double>(now - slice_start_).count());
    slice_start_ = now;
  }
}

double quiet_floor(const std::vector<std::vector<double>>& runs) {
  if (runs.empty() || runs[0].empty())
    throw std::invalid_argument("quiet_floor needs at least one run with slices");
  for (const std::vector<double>& run : runs) {
    if (run.size() != runs[0].size())
      throw std::invalid_argument("quiet_floor: runs are sliced differently");
  }
  double total = 0;
  for (size_t s = 0; s < runs[0].size(); ++s) {
    double fastest = runs[0][s];
    for (const std::vector<double>& run : runs) fastest = std::min(fastest, run[s]);
    total += fastest;
  }
  return total;
}

}  // namespace stoker
