#include "cli/op_trace.h"

#include <time.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace stoker::cli {
namespace {

namespace profiler = torch::autograd::profiler;

int64_t realtime_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// The steady clock minus CLOCK_REALTIME: a realtime read bracketed by two steady reads, the
// narrowest bracket of several tries, so that a thread preempted between two reads (a loaded
// machine) does not shift every operator by the time it waited.
int64_t steady_minus_realtime() {
  int64_t best = 0;
  int64_t narrowest = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 32; ++i) {
    const int64_t before = Tracer::now_ns();
    const int64_t real = realtime_ns();
    const int64_t after = Tracer::now_ns();
    if (after - before < narrowest) {
      narrowest = after - before;
      best = before + (after - before) / 2 - real;
    }
  }
  return best;
}

// The profiler's events as spans per LibTorch thread: a push and the pop of the same handle.
// Its times are CLOCK_REALTIME's; they are moved onto the Tracer's steady clock.
void add_operators(Tracer& tracer, const profiler::thread_event_lists& lists) {
  const int64_t steady_minus_real = steady_minus_realtime();
  const profiler::LegacyEvent* reference = nullptr;
  std::unordered_map<uint64_t, const profiler::LegacyEvent*> open;
  std::map<uint64_t, std::vector<Tracer::ImportedSpan>> tracks;
  for (const auto& list : lists) {
    for (const profiler::LegacyEvent& e : list) {
      if (reference == nullptr) reference = &e;
      if (e.kind() == profiler::EventKind::PushRange) {
        open[e.handle()] = &e;
      } else if (e.kind() == profiler::EventKind::PopRange) {
        auto it = open.find(e.handle());
        if (it == open.end()) continue;
        const profiler::LegacyEvent& start = *it->second;
        // Differences to one reference event keep the nanoseconds a double of µs would lose.
        const int64_t reference_ns = std::llround(reference->cpuUs() * 1000);
        auto steady = [&](const profiler::LegacyEvent& x) {
          return reference_ns + std::llround(reference->cpuElapsedUs(x) * 1000) + steady_minus_real;
        };
        tracks[start.threadId()].push_back({start.name(), steady(start), steady(e)});
        open.erase(it);
      }
    }
  }
  for (const auto& [thread, spans] : tracks) {
    tracer.add_track("libtorch ops, thread " + std::to_string(thread),
                     kOpTrackTidBase + static_cast<int64_t>(thread), "op", spans);
  }
}

}  // namespace

OpTrace::OpTrace(Tracer* tracer) {
  if (tracer == nullptr) return;
  guard_ = std::make_unique<profiler::TLSLegacyProfilerGuard>(
      torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU),
      [tracer](const profiler::thread_event_lists& lists) {
        // Called from the destructor: an allocation failure leaves the operators out.
        try {
          add_operators(*tracer, lists);
        } catch (const std::bad_alloc&) {
        }
      });
}

OpTrace::~OpTrace() = default;

}  // namespace stoker::cli
