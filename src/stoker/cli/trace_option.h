#pragma once
// --trace FILE.json, for the commands that run the pipeline (train, bench loader): the Tracer
// they hand to the loader and the trainer, and the Chrome trace written from it at the end.
// The CLI owns the Tracer (the library keeps no process-wide one). Stateless functions.

#include <memory>
#include <string>

#include "stoker/trace/tracer.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stoker::cli {

// Registers --trace on `command`, its value into `path`.
CLI::Option* add_trace_option(CLI::App& command, std::string& path);

// A Tracer for --trace `path`, or null when `path` is empty. The caller checks the path first
// (output_checks.h: check_output_file), so a bad one fails before any work.
std::unique_ptr<Tracer> make_tracer(const std::string& path, TracerOptions options = {});

// Writes `tracer`'s Chrome trace to `path` (or, if that fails, to a rescue copy that the Error
// names: util/output_rescue.h); nothing when `tracer` is null. Throws Error.
void write_trace(const Tracer* tracer, const std::string& path);

}  // namespace stoker::cli
