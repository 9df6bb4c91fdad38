#pragma once
// Tracer: spans and counters recorded by the threads that run the pipeline and the trainer,
// for a Chrome trace (chrome_trace.h). Each thread writes into its own bounded buffer without a
// lock; a full buffer drops the event and counts it. Tracing is off where no Tracer is given:
// every recording site takes a `Tracer*` and does nothing but a null check when it is null.
//
// There is no process-wide tracer: whoever runs the work owns the Tracer and hands it to the
// components it builds (the CLI does for --trace), so two loaders in one process can trace to
// different files, or one traced and one not, and the library sets no global state.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "stoker/util/thread_annotations.h"

namespace stoker {

// One recorded event. `category` and `name` are borrowed: they must outlive the Tracer (string
// literals, in practice).
struct TraceEvent {
  enum class Kind : uint8_t { kSpan, kCounter };
  Kind kind = Kind::kSpan;
  const char* category = "";
  const char* name = "";
  int64_t start_ns = 0;     // Tracer::now_ns() time
  int64_t duration_ns = 0;  // spans only
  double value = 0;         // counters only
};

// The events one thread recorded, in the order it recorded them.
struct ThreadTrace {
  int64_t tid = 0;   // the operating system's thread id
  std::string name;  // the thread's name (pthread_getname_np) when it first recorded
  std::vector<TraceEvent> events;
  uint64_t dropped = 0;  // events this thread recorded while its buffer was full
};

struct TracerOptions {
  // Capacity of each thread's buffer, in events (48 bytes each); allocated when a thread first
  // records. Must be at least 1.
  size_t events_per_thread = size_t{1} << 16;
};

// Thread-safe: any thread may record at any time, and snapshot() may run while they do. The
// Tracer must outlive every thread's recording calls.
class Tracer {
 public:
  explicit Tracer(TracerOptions options = {});
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The time base of every event: std::chrono::steady_clock's nanoseconds since its epoch, so
  // that code that already times its stages with that clock can record those times as spans.
  static int64_t now_ns();
  // now_ns() when this Tracer was made; the export's time zero.
  int64_t origin_ns() const { return origin_ns_; }
  // Records a span of the calling thread from `start_ns` to `end_ns` (values of now_ns()).
  void complete(const char* category, const char* name, int64_t start_ns, int64_t end_ns);
  // Records the value of counter `name` at this moment.
  void counter(const char* category, const char* name, double value);

  // A span another profiler recorded; times are now_ns() values.
  struct ImportedSpan {
    std::string name;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };
  // Adds a track (a ThreadTrace of id `tid`, named `name`) of spans in `category` recorded by
  // another profiler (LibTorch's operator events). The Tracer keeps copies of the names. At
  // most events_per_thread spans are kept, the rest counted as dropped.
  void add_track(const std::string& name, int64_t tid, const char* category,
                 const std::vector<ImportedSpan>& spans) STOKER_EXCLUDES(mutex_);

  // The events recorded so far, one entry per thread that recorded (in the order threads first
  // recorded), then the tracks added.
  std::vector<ThreadTrace> snapshot() const STOKER_EXCLUDES(mutex_);
  // Events dropped so far over all threads.
  uint64_t dropped() const STOKER_EXCLUDES(mutex_);

 private:
  struct ThreadBuffer;
  ThreadBuffer* this_thread_buffer() STOKER_EXCLUDES(mutex_);
  void record(const TraceEvent& event);

  const TracerOptions options_;
  const uint64_t id_;  // unique over the process's life, so a thread's cache never confuses two
  const int64_t origin_ns_;
  mutable Mutex mutex_;
  // The vector; each thread appends to its own buffer without the lock.
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_ STOKER_GUARDED_BY(mutex_);
  std::vector<ThreadTrace> tracks_ STOKER_GUARDED_BY(mutex_);
  std::unordered_set<std::string> names_ STOKER_GUARDED_BY(mutex_);  // the tracks' names
};

// RAII span: records [construction, destruction) of the calling thread on `tracer`, or nothing
// when `tracer` is null. Not thread-safe (a stack object of one thread).
class TraceSpan {
 public:
  TraceSpan(Tracer* tracer, const char* category, const char* name)
      : tracer_(tracer), category_(category), name_(name) {
    if (tracer_ != nullptr) start_ns_ = tracer_->now_ns();
  }
  ~TraceSpan() {
    if (tracer_ != nullptr) tracer_->complete(category_, name_, start_ns_, tracer_->now_ns());
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  Tracer* tracer_;
  const char* category_;
  const char* name_;
  int64_t start_ns_ = 0;
};

// Records a counter when `tracer` is not null.
inline void trace_counter(Tracer* tracer, const char* category, const char* name, double value) {
  if (tracer != nullptr) tracer->counter(category, name, value);
}

}  // namespace stoker
