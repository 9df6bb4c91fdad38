// --workers N|auto: what it accepts, what it stores, and its one-line errors.
#include "cli/workers_option.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/usage.h"
#include "stoker/pipeline/loader_core.h"

namespace stoker::cli {
namespace {

// Parses `--workers text` for a command whose least worker count is `min`: the value stored,
// or the UsageError's message.
std::string parse(const std::string& text, int min) {
  CLI::App app;
  int workers = 7;
  add_workers_option(app, workers, "workers", min);
  std::vector<std::string> args = {text, "--workers"};  // CLI11 takes them in reverse
  try {
    app.parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return std::to_string(workers);
}

TEST(WorkersOptionTest, AcceptsNumbersAndAuto) {
  EXPECT_EQ(parse("3", 0), "3");
  EXPECT_EQ(parse("0", 0), "0");
  EXPECT_EQ(parse("-1", -1), "-1");
  EXPECT_EQ(parse("auto", 0), std::to_string(kAutoTuneWorkers));
  EXPECT_EQ(parse("auto", -1), std::to_string(kAutoTuneWorkers));
}

TEST(WorkersOptionTest, RejectsTheRestInOneLine) {
  EXPECT_EQ(parse("many", 0), "--workers: 'many' is not a whole number or auto");
  EXPECT_EQ(parse("Auto", 0), "--workers: 'Auto' is not a whole number or auto");
  EXPECT_EQ(parse("", 0), "--workers: '' is not a whole number or auto");
  EXPECT_EQ(parse("-1", 0), "--workers must be at least 0");
  EXPECT_EQ(parse("-2", -1), "--workers must be at least -1");  // auto is spelt auto
  EXPECT_EQ(parse(std::to_string(kMaxWorkers + 1), 0),
            "--workers must be at most " + std::to_string(kMaxWorkers) + " (the loader's limit)");
}

TEST(WorkersOptionTest, ShowsAutoAsAuto) {
  EXPECT_EQ(workers_text(kAutoTuneWorkers), "auto");
  EXPECT_EQ(workers_text(2), "2");
}

}  // namespace
}  // namespace stoker::cli
