#include "cli/loader_settings_options.h"

#include <CLI/CLI.hpp>

#include "cli/usage.h"

namespace stoker::cli {

void add_loader_settings_options(CLI::App& command, LoaderSettings& settings,
                                 const LoaderSettingsFlags& flags) {
  const CLI::Validator number =
      whole_number("--workers", flags.per_core ? -1 : 0, kMaxWorkers, "the loader's limit");
  command
      .add_option_function<std::string>(
          "--workers",
          [&settings](const std::string& text) {
            settings.workers =
                text == "-1" ? WorkerCount::per_core() : WorkerCount::parse(text).value_or_throw();
          },
          flags.workers_help)
      ->check(CLI::Validator(
          [number](std::string& text) -> std::string {
            if (text == "auto") return "";
            if (text.empty() || text.find_first_not_of("+-0123456789") != std::string::npos)
              throw UsageError("--workers: '" + text + "' is not a whole number or auto");
            return number(text);
          },
          "", "workers"))
      ->default_str(workers_text(settings.workers));
  const CLI::Validator shards =
      whole_number("--shuffle-window", 1, kMaxShuffleWindow, "the loader's limit");
  command
      .add_option_function<std::string>(
          "--shuffle-window",
          [&settings](const std::string& text) {
            settings.shuffle_window = parse_shuffle_window(text).value_or_throw();
          },
          "Shuffle within a window of N shards at a time (shards permuted each epoch: locality "
          "for streamed data), or all: the whole dataset")
      ->check(CLI::Validator(
          [shards](std::string& text) -> std::string {
            if (text == "all") return "";
            if (text.empty() || text.find_first_not_of("+-0123456789") != std::string::npos)
              throw UsageError("--shuffle-window: '" + text + "' is not a whole number or all");
            return shards(text);
          },
          "", "shuffle_window"))
      ->default_str(shuffle_window_text(settings.shuffle_window));
  if (flags.prefetch) {
    command
        .add_option("--prefetch", settings.prefetch,
                    "Batches in flight (-1 = auto: 16 MiB, 4 to 64)")
        ->check(whole_number("--prefetch", kAutoPrefetch, kMaxPrefetch, "the loader's limit"))
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              if (text == "0") throw UsageError("--prefetch must be -1 (auto) or at least 1");
              return "";
            },
            "", "not_zero"))
        ->capture_default_str();
  }
  if (flags.verify) {
    command
        .add_option_function<std::string>(
            "--verify",
            [&settings](const std::string& name) {
              settings.verify = parse_verify_policy(name).value_or_throw();
            },
            "Record checksums: " + or_list(kVerifyPolicyNames.names()) +
                " (once: at the first read)")
        ->check(one_of("--verify", kVerifyPolicyNames.names()))
        ->default_str(to_string(settings.verify));
  }
}

std::string workers_text(const WorkerCount& workers) {
  return workers.mode() == WorkerCount::Mode::kPerCore ? "-1" : workers.to_string();
}

}  // namespace stoker::cli
