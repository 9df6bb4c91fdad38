// The command line's conventions without running the binary: typo suggestions, number and
// choice checks, and CLI11's parse errors turned into our one-line messages.
#include "cli/usage.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace stoker::cli {
namespace {

TEST(UsageTest, ClosestMatchFindsTyposAndUniquePrefixes) {
  const std::vector<std::string> commands = {"bench", "convert", "inspect", "train", "verify"};
  EXPECT_EQ(closest_match("trian", commands), "train");  // a swap counts once
  EXPECT_EQ(closest_match("trai", commands), "train");
  EXPECT_EQ(closest_match("verfy", commands), "verify");
  EXPECT_EQ(closest_match("xyz", commands), "");
  EXPECT_EQ(closest_match("t", commands), "");
  const std::vector<std::string> options = {"--epochs", "--checkpoint-dir", "--lr", "--log"};
  EXPECT_EQ(closest_match("--epoch", options), "--epochs");
  EXPECT_EQ(closest_match("--check", options), "--checkpoint-dir");
  EXPECT_EQ(closest_match("--l", options), "--lr");  // one edit from --lr and --log: the first
  EXPECT_EQ(closest_match("--", options), "");
  EXPECT_EQ(closest_match("--seed", options), "");
}

// The UsageError message a validator gives for `text`, or "" if it accepts it.
std::string check(const CLI::Validator& validator, std::string text) {
  try {
    return validator(text);
  } catch (const UsageError& e) {
    return e.what();
  }
}

TEST(UsageTest, WholeNumbersNameTheOptionAndTheLimit) {
  const CLI::Validator epochs = whole_number("--epochs", 1, INT64_MAX);
  EXPECT_EQ(check(epochs, "3"), "");
  EXPECT_EQ(check(epochs, "+3"), "");
  EXPECT_EQ(check(epochs, "0"), "--epochs must be at least 1");
  EXPECT_EQ(check(epochs, "-5"), "--epochs must be at least 1");
  EXPECT_EQ(check(epochs, "9223372036854775807"), "");
  EXPECT_EQ(check(epochs, "9223372036854775808"), "--epochs must be at most 9223372036854775807");
  EXPECT_EQ(check(epochs, "99999999999999999999999"),
            "--epochs must be at most 9223372036854775807");
  EXPECT_EQ(check(epochs, "-99999999999999999999999"), "--epochs must be at least 1");
  for (const char* bad : {"abc", "1.5", "", "-", "1e3", "3 ", "0x10"})
    EXPECT_EQ(check(epochs, bad), std::string("--epochs: '") + bad + "' is not a whole number");
  const CLI::Validator workers = whole_number("--workers", -1, 1024, "the loader's limit");
  EXPECT_EQ(check(workers, "-1"), "");
  EXPECT_EQ(check(workers, "-2"), "--workers must be at least -1");
  EXPECT_EQ(check(workers, "100000"), "--workers must be at most 1024 (the loader's limit)");
  const CLI::Validator seed = whole_number("--seed", 0, UINT64_MAX);
  EXPECT_EQ(check(seed, "18446744073709551615"), "");
  EXPECT_EQ(check(seed, "18446744073709551616"), "--seed must be at most 18446744073709551615");
}

TEST(UsageTest, RealNumbers) {
  const CLI::Validator lr = real_number("--lr", 0, false);
  EXPECT_EQ(check(lr, "0.1"), "");
  EXPECT_EQ(check(lr, "1e-3"), "");
  EXPECT_EQ(check(lr, "abc"), "--lr: 'abc' is not a number");
  EXPECT_EQ(check(lr, "0.1x"), "--lr: '0.1x' is not a number");
  EXPECT_EQ(check(lr, "nan"), "--lr: 'nan' is not a number");
  EXPECT_EQ(check(lr, "inf"), "--lr: 'inf' is not a finite number");
  EXPECT_EQ(check(lr, "1e999"), "--lr: '1e999' is not a finite number");
  EXPECT_EQ(check(lr, "0"), "--lr must be greater than 0");
  EXPECT_EQ(check(lr, "1e-320"), "");  // tiny but positive
  const CLI::Validator clip = real_number("--clip-grad", 0, true, 10);
  EXPECT_EQ(check(clip, "0"), "");
  EXPECT_EQ(check(clip, "-0.5"), "--clip-grad must be at least 0");
  EXPECT_EQ(check(clip, "11"), "--clip-grad must be at most 10");
}

TEST(UsageTest, ChoicesSuggestTheNearest) {
  const CLI::Validator amp = one_of("--amp", {"off", "bf16", "fp16"});
  EXPECT_EQ(check(amp, "bf16"), "");
  EXPECT_EQ(check(amp, "bf61"),
            "--amp: unknown value 'bf61' (did you mean 'bf16'? choose off, "
            "bf16 or fp16)");
  EXPECT_EQ(check(amp, "fp8"), "--amp: unknown value 'fp8' (choose off, bf16 or fp16)");
  EXPECT_EQ(check(amp, "tensorfloat"),
            "--amp: unknown value 'tensorfloat' (choose off, bf16 or fp16)");
}

// A small command tree like stoker's, parsed from `args`; the message of the parse error.
std::string parse_error(std::vector<std::string> args) {
  CLI::App app("test", "stoker");
  app.require_subcommand(1);
  int64_t epochs = 1;
  double lr = 0;
  double unchecked = 0;
  CLI::App* train = app.add_subcommand("train", "");
  train->add_option("--unchecked", unchecked, "");
  add_whole_number(*train, "--epochs", epochs, "", 1);
  train->add_option("--lr", lr, "")->check(real_number("--lr", 0, false));
  CLI::App* bench = app.add_subcommand("bench", "");
  bench->require_subcommand(1);
  bench->add_subcommand("loader", "");
  bench->add_subcommand("train", "");
  std::string dir;
  app.add_subcommand("verify", "")->add_option("DIR", dir, "")->required();
  std::reverse(args.begin(), args.end());  // CLI11 takes them from the back
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return parse_error_message(app, e);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(UsageTest, ParseErrorsBecomeOneLineOfOurOwn) {
  EXPECT_EQ(parse_error({"train", "--epochs", "3"}), "");
  EXPECT_EQ(parse_error({"trian"}), "unknown command 'trian' (did you mean 'train'?)");
  EXPECT_EQ(parse_error({"fly"}), "unknown command 'fly': the commands are train, bench or verify");
  EXPECT_EQ(parse_error({}), "missing command: choose train, bench or verify (see stoker --help)");
  EXPECT_EQ(parse_error({"bench", "lodaer"}),
            "unknown command 'bench lodaer' (did you mean 'bench loader'?)");
  EXPECT_EQ(parse_error({"bench"}),
            "missing command after 'bench': choose loader or train (see stoker bench --help)");
  EXPECT_EQ(parse_error({"train", "--epoch", "3"}),
            "unknown option --epoch (did you mean --epochs?)");
  EXPECT_EQ(parse_error({"train", "--epoch=3"}), "unknown option --epoch (did you mean --epochs?)");
  EXPECT_EQ(parse_error({"train", "--colour"}),
            "unknown option --colour (see stoker train --help)");
  EXPECT_EQ(parse_error({"train", "extra"}),
            "unexpected argument 'extra' (see stoker train --help)");
  EXPECT_EQ(parse_error({"train", "--epochs", "0"}), "--epochs must be at least 1");
  EXPECT_EQ(parse_error({"train", "--lr", "abc"}), "--lr: 'abc' is not a number");
  EXPECT_EQ(parse_error({"verify"}), "DIR is required (see stoker verify --help)");
  EXPECT_EQ(parse_error({"train", "--unchecked", "x1"}),
            "--unchecked: 'x1' is not a valid value (see stoker train --help)");
  EXPECT_EQ(parse_error({"train", "--lr"}),
            "--lr: 1 required FLOAT missing (see stoker train --help)");
}

}  // namespace
}  // namespace stoker::cli
