// The loader's settings on the command line: what --workers, --prefetch and --verify accept,
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
// `per_core`: the settings' text ("workers prefetch verify"), or the UsageError's message.
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
         to_string(settings.verify);
}

TEST(LoaderSettingsOptionsTest, AcceptsNumbersAndAuto) {
  EXPECT_EQ(parse("--workers", "3"), "3 -1 once");
  EXPECT_EQ(parse("--workers", "0"), "0 -1 once");
  EXPECT_EQ(parse("--workers", "-1", true), "-1 -1 once");
  EXPECT_EQ(parse("--workers", "auto"), "auto -1 once");
  EXPECT_EQ(parse("--workers", "auto", true), "auto -1 once");
  EXPECT_EQ(parse("--prefetch", "9"), "7 9 once");
  EXPECT_EQ(parse("--verify", "always"), "7 -1 always");
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
}

TEST(LoaderSettingsOptionsTest, ShowsTheModesAsTyped) {
  EXPECT_EQ(workers_text(WorkerCount::tuned()), "auto");
  EXPECT_EQ(workers_text(WorkerCount::per_core()), "-1");
  EXPECT_EQ(workers_text(2), "2");
}

}  // namespace
}  // namespace stoker::cli
