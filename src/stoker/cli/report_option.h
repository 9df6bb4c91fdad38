#pragma once
// --report DIR, for the commands that run the pipeline (train, bench loader; the doctor too):
// the option, the early check that the report can be written there, and the report written
// at the end (stoker/doctor/run_report.h: DIR/index.html and DIR/report.json). Stateless
// functions.

#include <string>

#include "stoker/doctor/run_report.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stoker::cli {

// Registers --report on `command`, its value into `dir`.
CLI::Option* add_report_option(CLI::App& command, std::string& dir);

// Checks that the report can be written into `dir` (check_report_dir: creates it if needed), so
// that a bad one fails before any work; nothing when `dir` is empty. Throws Error.
void check_report_option(const std::string& dir);

// Writes `report` into `dir` (or, if that fails, into a rescue copy that the Error names:
// util/output_rescue.h); nothing when `dir` is empty. Throws Error.
void write_report_option(const RunReport& report, const std::string& dir);

// The command line as run, for a report: "stoker" and main()'s arguments, each quoted for a
// POSIX shell when it needs it.
std::string command_line();

}  // namespace stoker::cli
