#include "cli/run_output_options.h"

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/usage.h"
#include "stoker/net/remote_url.h"
#include "stoker/trace/chrome_trace.h"
#include "stoker/util/output_rescue.h"

namespace stoker::cli {
namespace {

// `word` as a POSIX shell reads it back: as is when it holds only safe characters, else in
// single quotes (a quote inside as '\'').
std::string shell_quoted(const std::string& word) {
  const bool safe = !word.empty() && word.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-+=.,:/@%") == std::string::npos;
  if (safe) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// An output path option: any path but the empty one (usage.h's path_value).
CLI::Option* add_output_option(CLI::App& command, const std::string& name, std::string& value,
                               const std::string& help) {
  return command.add_option(name, value, help)->check(path_value(name));
}

}  // namespace

CLI::Option* add_trace_option(CLI::App& command, std::string& path) {
  return add_output_option(command, "--trace", path,
                           "Write a Chrome trace (chrome://tracing, Perfetto) of the loader's "
                           "and the training loop's stages to this JSON file at the end");
}

std::unique_ptr<Tracer> make_tracer(const std::string& path, TracerOptions options) {
  if (path.empty()) return nullptr;
  return std::make_unique<Tracer>(options);
}

void write_trace(const Tracer* tracer, const std::string& path) {
  if (tracer == nullptr) return;
  throw_if_error(write_or_rescue("the trace", path, [tracer](const std::string& where) {
    return write_chrome_trace(*tracer, where);
  }));
}

CLI::Option* add_report_option(CLI::App& command, std::string& dir) {
  return add_output_option(command, "--report", dir,
                           "Write a report of the run into this directory at the end: "
                           "index.html (one self-contained page: where the time went, "
                           "throughput over time, charts) and report.json");
}

void check_report_option(const std::string& dir) {
  if (dir.empty()) return;
  const Status checked = check_report_dir(dir);
  if (!checked.is_ok()) throw Error(Status(checked.code(), "--report: " + checked.message()));
}

void write_report_option(const RunReport& report, const std::string& dir) {
  if (dir.empty()) return;
  throw_if_error(write_or_rescue("the report", dir, [&report](const std::string& where) {
    return write_report(report, where);
  }));
}

std::string command_line() {
  std::string line = "stoker";
  for (const std::string& word : command_arguments())
    line += " " + shell_quoted(remote::shown_argument(word));
  return line;
}

}  // namespace stoker::cli
