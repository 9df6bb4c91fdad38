#include "cli/trace_option.h"

#include <CLI/CLI.hpp>

#include "cli/usage.h"
#include "stoker/trace/chrome_trace.h"
#include "stoker/util/output_rescue.h"

namespace stoker::cli {

CLI::Option* add_trace_option(CLI::App& command, std::string& path) {
  return command
      .add_option("--trace", path,
                  "Write a Chrome trace (chrome://tracing, Perfetto) of the loader's "
                  "and the training loop's stages to this JSON file at the end")
      ->check(path_value("--trace"));
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

}  // namespace stoker::cli
