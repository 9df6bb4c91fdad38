#include "stoker/trace/tracer.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace stoker {
namespace {

int64_t this_thread_id() { return static_cast<int64_t>(syscall(SYS_gettid)); }

std::string this_thread_name() {
  char name[64] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0) return {};
  return name;
}

uint64_t next_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// Identifies the thread for as long as the process lives (an OS thread id may be reused).
thread_local const uint64_t t_thread_serial = next_id();

// The buffer this thread last recorded into, and the Tracer it belongs to.
struct ThreadCache {
  uint64_t tracer_id = 0;
  void* buffer = nullptr;
};
thread_local ThreadCache t_cache;

}  // namespace

// Written by its thread only; size_ publishes the events before it to snapshot().
struct Tracer::ThreadBuffer {
  ThreadBuffer(size_t capacity, uint64_t serial, std::string name)
      : serial(serial),
        tid(this_thread_id()),
        name(std::move(name)),
        capacity(capacity),
        events(new TraceEvent[capacity]) {}

  const uint64_t serial;
  const int64_t tid;
  const std::string name;
  const size_t capacity;
  const std::unique_ptr<TraceEvent[]> events;
  std::atomic<size_t> size{0};
  std::atomic<uint64_t> dropped{0};
};

Tracer::Tracer(TracerOptions options) : options_(options), id_(next_id()), origin_ns_(now_ns()) {}

Tracer::~Tracer() = default;

int64_t Tracer::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Tracer::ThreadBuffer* Tracer::this_thread_buffer() {
  if (t_cache.tracer_id == id_) return static_cast<ThreadBuffer*>(t_cache.buffer);
  // First event of this thread on this Tracer, or the thread recorded on another Tracer since.
  const uint64_t serial = t_thread_serial;
  MutexLock lock(mutex_);
  auto it =
      std::find_if(buffers_.begin(), buffers_.end(),
                   [&](const std::unique_ptr<ThreadBuffer>& b) { return b->serial == serial; });
  ThreadBuffer* buffer = nullptr;
  if (it != buffers_.end()) {
    buffer = it->get();
  } else {
    buffers_.push_back(std::make_unique<ThreadBuffer>(
        std::max<size_t>(options_.events_per_thread, 1), serial, this_thread_name()));
    buffer = buffers_.back().get();
  }
  t_cache = {id_, buffer};
  return buffer;
}

void Tracer::record(const TraceEvent& event) {
  ThreadBuffer* buffer = this_thread_buffer();
  const size_t n = buffer->size.load(std::memory_order_relaxed);
  if (n == buffer->capacity) {
    buffer->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  buffer->events[n] = event;
  buffer->size.store(n + 1, std::memory_order_release);
}

void Tracer::complete(const char* category, const char* name, int64_t start_ns, int64_t end_ns) {
  TraceEvent event;
  event.kind = TraceEvent::Kind::kSpan;
  event.category = category;
  event.name = name;
  event.start_ns = start_ns;
  event.duration_ns = end_ns - start_ns;
  record(event);
}

void Tracer::counter(const char* category, const char* name, double value) {
  TraceEvent event;
  event.kind = TraceEvent::Kind::kCounter;
  event.category = category;
  event.name = name;
  event.start_ns = now_ns();
  event.value = value;
  record(event);
}

void Tracer::add_track(const std::string& name, int64_t tid, const char* category,
                       const std::vector<ImportedSpan>& spans) {
  MutexLock lock(mutex_);
  ThreadTrace track;
  track.tid = tid;
  track.name = name;
  const size_t kept = std::min(spans.size(), std::max<size_t>(options_.events_per_thread, 1));
  track.dropped = spans.size() - kept;
  for (size_t i = 0; i < kept; ++i) {
    TraceEvent event;
    event.category = category;
    event.name = names_.insert(spans[i].name).first->c_str();
    event.start_ns = spans[i].start_ns;
    event.duration_ns = spans[i].end_ns - spans[i].start_ns;
    track.events.push_back(event);
  }
  tracks_.push_back(std::move(track));
}

std::vector<ThreadTrace> Tracer::snapshot() const {
  MutexLock lock(mutex_);
  std::vector<ThreadTrace> out;
  out.reserve(buffers_.size());
  for (const auto& buffer : buffers_) {
    ThreadTrace trace;
    trace.tid = buffer->tid;
    trace.name = buffer->name;
    const size_t n = buffer->size.load(std::memory_order_acquire);
    trace.events.assign(buffer->events.get(), buffer->events.get() + n);
    trace.dropped = buffer->dropped.load(std::memory_order_relaxed);
    out.push_back(std::move(trace));
  }
  out.insert(out.end(), tracks_.begin(), tracks_.end());
  return out;
}

uint64_t Tracer::dropped() const {
  MutexLock lock(mutex_);
  uint64_t total = 0;
  for (const auto& buffer : buffers_) total += buffer->dropped.load(std::memory_order_relaxed);
  for (const ThreadTrace& track : tracks_) total += track.dropped;
  return total;
}

}  // namespace stoker
