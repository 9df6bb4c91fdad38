#pragma once
// Chrome trace export: a Tracer's events as the JSON that chrome://tracing and Perfetto open —
// {"traceEvents": [...]} with a "process_name" and a "thread_name" metadata event ("M") per
// thread, spans as complete events ("X", ts and dur in microseconds), counters as "C" events
// (args {"value": v}), and "otherData": {"dropped_events": N}. pid is the calling process's,
// tid each recording thread's operating-system id.

#include <string>

#include "stoker/trace/tracer.h"
#include "stoker/util/status.h"

namespace stoker {

// The trace as one JSON document. Safe while other threads record (it exports what is there).
std::string chrome_trace_json(const Tracer& tracer);

// Writes chrome_trace_json() to `path` crash-safely (AtomicFile): kInvalidArgument or kIoError
// naming the path when it cannot be written (see check_output_path).
Status write_chrome_trace(const Tracer& tracer, const std::string& path);

}  // namespace stoker
