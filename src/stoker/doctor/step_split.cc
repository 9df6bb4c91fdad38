#include "stoker/doctor/step_split.h"

#include <algorithm>
#include <cstring>

namespace stoker {

double StepSplit::other() const { return std::max(0.0, wall - data - h2d - compute()); }

double StepSplit::per_batch(double part) const {
  return batches > 0 ? part / static_cast<double>(batches) : 0.0;
}

double StepSplit::per_second(double part) const {
  return part > 0 ? static_cast<double>(batches) / part : 0.0;
}

std::vector<std::pair<std::string, double>> StepSplit::parts() const {
  return {{"data", data},           {"h2d", h2d},
          {"forward", forward},     {"backward", backward},
          {"optimizer", optimizer}, {"allreduce_wait", allreduce_wait},
          {"other", other()}};
}

namespace {

// Calls `f(event)` for each span of `category` wholly inside [from_ns, to_ns).
template <typename F>
void for_spans(const std::vector<ThreadTrace>& trace, const char* category, int64_t from_ns,
               int64_t to_ns, F f) {
  for (const ThreadTrace& thread : trace) {
    for (const TraceEvent& event : thread.events) {
      if (event.kind != TraceEvent::Kind::kSpan || std::strcmp(event.category, category) != 0)
        continue;
      if (event.start_ns >= from_ns && event.start_ns + event.duration_ns <= to_ns) f(event);
    }
  }
}

}  // namespace

double sum_spans(const std::vector<ThreadTrace>& trace, const char* category, const char* name,
                 int64_t from_ns, int64_t to_ns) {
  double seconds = 0;
  for_spans(trace, category, from_ns, to_ns, [&](const TraceEvent& event) {
    if (std::strcmp(event.name, name) == 0)
      seconds += static_cast<double>(event.duration_ns) * 1e-9;
  });
  return seconds;
}

StepSplit split_steps(const std::vector<ThreadTrace>& trace, int64_t from_ns, int64_t to_ns) {
  StepSplit split;
  split.wall = std::max<int64_t>(0, to_ns - from_ns) * 1e-9;
  double optimizer_total = 0;
  for_spans(trace, "train", from_ns, to_ns, [&](const TraceEvent& event) {
    const double seconds = static_cast<double>(event.duration_ns) * 1e-9;
    const char* name = event.name;
    if (std::strcmp(name, "data") == 0) {
      split.data += seconds;
    } else if (std::strcmp(name, "h2d") == 0) {
      split.h2d += seconds;
      ++split.batches;
    } else if (std::strcmp(name, "forward") == 0) {
      split.forward += seconds;
    } else if (std::strcmp(name, "backward") == 0) {
      split.backward += seconds;
    } else if (std::strcmp(name, "optimizer") == 0) {
      optimizer_total += seconds;
    } else if (std::strcmp(name, "allreduce_wait") == 0) {
      split.allreduce_wait += seconds;
    }
  });
  split.optimizer = std::max(0.0, optimizer_total - split.allreduce_wait);
  split.fetch = sum_spans(trace, "pipeline", "fetch", from_ns, to_ns);
  return split;
}

}  // namespace stoker
