// The loader's settings on the command line: what --workers, --prefetch, --verify and
// --shuffle-window accept,
// what they store, and their one-line errors.
#include "cli/loader_settings_options.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/usage.h"

namespace stoker::cli {
namespace {

// Parses `option text` on a command offering every setting, --workers -1 allowed with
// `per_core`: the settings' text ("workers prefetch verify shuffle_window"), or the UsageError's
// message.
std::string parse(const std::string& option, const std::string& text, bool per_core = false) {
  CLI::App app;
  LoaderSettings settings;
  settings.workers = 7;
  add_loader_settings_options(app, settings, {"workers", per_core, true, true});
  std::vector<std::string> args = {text, option};  // CLI11 takes them in reverse
  try {
    app.parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return workers_text(settings.workers) + " " + std::to_string(settings.prefetch) + " " +
         to_string(settings.verify) + " " + shuffle_window_text(settings.shuffle_window);
}

TEST(LoaderSettingsOptionsTest, AcceptsNumbersAndAuto) {
  EXPECT_EQ(parse("--workers", "3"), "3 -1 once all");
  EXPECT_EQ(parse("--workers", "0"), "0 -1 once all");
  EXPECT_EQ(parse("--workers", "-1", true), "-1 -1 once all");
  EXPECT_EQ(parse("--workers", "auto"), "auto -1 once all");
  EXPECT_EQ(parse("--workers", "auto", true), "auto -1 once all");
  EXPECT_EQ(parse("--prefetch", "9"), "7 9 once all");
  EXPECT_EQ(parse("--verify", "always"), "7 -1 always all");
  EXPECT_EQ(parse("--shuffle-window", "16"), "7 -1 once 16");
  EXPECT_EQ(parse("--shuffle-window", "all"), "7 -1 once all");
}

TEST(LoaderSettingsOptionsTest, RejectsTheRestInOneLine) {
  EXPECT_EQ(parse("--workers", "many"), "--workers: 'many' is not a whole number or auto");
  EXPECT_EQ(parse("--workers", "Auto"), "--workers: 'Auto' is not a whole number or auto");
  EXPECT_EQ(parse("--workers", ""), "--workers: '' is not a whole number or auto");
  EXPECT_EQ(parse("--workers", "-1"), "--workers must be at least 0");
  EXPECT_EQ(parse("--workers", "-2", true), "--workers must be at least -1");  // auto: auto
  EXPECT_EQ(parse("--workers", std::to_string(kMaxWorkers + 1)),
            "--workers must be at most " + std::to_string(kMaxWorkers) + " (the loader's limit)");
  EXPECT_EQ(parse("--prefetch", "0"), "--prefetch must be -1 (auto) or at least 1");
  EXPECT_EQ(parse("--prefetch", std::to_string(kMaxPrefetch + 1)),
            "--prefetch must be at most " + std::to_string(kMaxPrefetch) + " (the loader's limit)");
  EXPECT_EQ(parse("--verify", "sometimes").rfind("--verify: ", 0), 0u);
  EXPECT_EQ(parse("--shuffle-window", "0"), "--shuffle-window must be at least 1");
  EXPECT_EQ(parse("--ra-reps", "0"), "--ra-reps must be at least 1");
  EXPECT_EQ(parse("--ra-reps", "257"), "--ra-reps must be at most 256 (the loader's limit)");
  EXPECT_EQ(parse("--ra-reps", "x"), "--ra-reps: 'x' is not a whole number");
  EXPECT_EQ(parse("--shuffle-window", "wide"),
            "--shuffle-window: 'wide' is not a whole number or all");
  EXPECT_EQ(parse("--shuffle-window", std::to_string(kMaxShuffleWindow + 1)),
            "--shuffle-window must be at most " + std::to_string(kMaxShuffleWindow) +
                " (the loader's limit)");
}

TEST(LoaderSettingsOptionsTest, ShowsTheModesAsTyped) {
  EXPECT_EQ(workers_text(WorkerCount::tuned()), "auto");
  EXPECT_EQ(workers_text(WorkerCount::per_core()), "-1");
  EXPECT_EQ(workers_text(2), "2");
}

}  // namespace
}  // namespace stoker::cli
