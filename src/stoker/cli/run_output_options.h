#pragma once
// --trace FILE.json and --report DIR, the optional outputs of the commands that run the pipeline
// (train, bench loader, doctor): the options, the Tracer the CLI owns and hands to the loader
// and the trainer (the library keeps no process-wide one), the early check that a report can be
// written, and the outputs written at the end — each, if writing it fails, into a rescue copy
// that the Error names (util/output_rescue.h). Stateless functions.

#include <memory>
#include <string>

#include "stoker/doctor/run_report.h"
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

// Writes `tracer`'s Chrome trace to `path`; nothing when `tracer` is null. Throws Error.
void write_trace(const Tracer* tracer, const std::string& path);

// Registers --report on `command`, its value into `dir`.
CLI::Option* add_report_option(CLI::App& command, std::string& dir);

// Checks that the report can be written into `dir` (check_report_dir: creates it if needed), so
// that a bad one fails before any work; nothing when `dir` is empty. Throws Error.
void check_report_option(const std::string& dir);

// Writes `report` into `dir`; nothing when `dir` is empty. Throws Error.
void write_report_option(const RunReport& report, const std::string& dir);

// The command line as run, for a report: "stoker" and main()'s arguments, each quoted for a
// POSIX shell when it needs it, a URL's password and query cut out (remote::shown_argument).
std::string command_line();

}  // namespace stoker::cli
