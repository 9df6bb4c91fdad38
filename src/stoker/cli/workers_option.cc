#include "cli/workers_option.h"

#include <CLI/CLI.hpp>

#include "cli/usage.h"
#include "stoker/pipeline/loader_core.h"

namespace stoker::cli {

CLI::Option* add_workers_option(CLI::App& command, int& workers, const std::string& help, int min) {
  const CLI::Validator number = whole_number("--workers", min, kMaxWorkers, "the loader's limit");
  // A transform, not a check: CLI11 converts the text it leaves ("auto" becomes the constant).
  return command.add_option("--workers", workers, help)
      ->transform(CLI::Validator(
          [number](std::string& text) -> std::string {
            if (text == "auto") {
              text = std::to_string(kAutoTuneWorkers);
              return "";
            }
            if (text.empty() || text.find_first_not_of("+-0123456789") != std::string::npos)
              throw UsageError("--workers: '" + text + "' is not a whole number or auto");
            return number(text);
          },
          "", "workers"));
}

std::string workers_text(int workers) {
  return workers == kAutoTuneWorkers ? "auto" : std::to_string(workers);
}

}  // namespace stoker::cli
