#include "stoker/trace/chrome_trace.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

constexpr const char* kProcessName = "stoker";

double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

nlohmann::json metadata(const char* what, int64_t pid, int64_t tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

// `origin_ns` is the trace's time zero.
nlohmann::json event_json(const TraceEvent& e, int64_t origin_ns, int64_t pid, int64_t tid) {
  nlohmann::json j = {{"cat", e.category},
                      {"name", e.name},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", to_us(e.start_ns - origin_ns)}};
  if (e.kind == TraceEvent::Kind::kSpan) {
    j["ph"] = "X";
    j["dur"] = to_us(e.duration_ns);
  } else {
    j["ph"] = "C";
    j["args"] = {{"value", e.value}};
  }
  return j;
}

}  // namespace

std::string chrome_trace_json(const Tracer& tracer) {
  const int64_t pid = static_cast<int64_t>(getpid());
  nlohmann::json events = nlohmann::json::array();
  events.push_back(metadata("process_name", pid, 0, kProcessName));
  uint64_t dropped = 0;
  for (const ThreadTrace& thread : tracer.snapshot()) {
    const std::string name =
        thread.name.empty() ? "thread " + std::to_string(thread.tid) : thread.name;
    events.push_back(metadata("thread_name", pid, thread.tid, name));
    for (const TraceEvent& e : thread.events)
      events.push_back(event_json(e, tracer.origin_ns(), pid, thread.tid));
    dropped += thread.dropped;
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"dropped_events", dropped}}}};
  // A thread name cut at 15 bytes may end inside a UTF-8 sequence: replace, never throw.
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status write_chrome_trace(const Tracer& tracer, const std::string& path) {
  const std::string json = chrome_trace_json(tracer);
  STOKER_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path));
  STOKER_RETURN_IF_ERROR(file.append(json.data(), json.size()));
  return file.commit();
}

}  // namespace stoker
