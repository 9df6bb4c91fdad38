#pragma once
// OpTrace: LibTorch's operator events in a stoker trace. While an OpTrace lives, LibTorch's
// legacy profiler (the one that works on Debian's 1.13; its Kineto export does not) records
// every operator the calling thread runs, and the threads its parallel regions use; when it
// ends, the operators go into the Tracer as spans of category "op", one track per LibTorch
// thread ("libtorch ops, thread N"), on the Tracer's clock. Costly (every operator is timed):
// `stoker train --trace-ops` only. Not thread-safe: made and destroyed on one thread.

#include <memory>

#include "stoker/trace/tracer.h"

namespace torch::autograd::profiler {
struct TLSLegacyProfilerGuard;
}

namespace stoker::cli {

// The tid of LibTorch thread `id`'s track in the export: far from the operating system's ids.
inline constexpr int64_t kOpTrackTidBase = int64_t{1} << 32;

class OpTrace {
 public:
  // Starts recording for `tracer`; null: does nothing.
  explicit OpTrace(Tracer* tracer);
  // Stops recording and adds the operators to the tracer.
  ~OpTrace();
  OpTrace(const OpTrace&) = delete;
  OpTrace& operator=(const OpTrace&) = delete;

 private:
  std::unique_ptr<torch::autograd::profiler::TLSLegacyProfilerGuard> guard_;
};

}  // namespace stoker::cli
