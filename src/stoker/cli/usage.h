#pragma once
// The command line's conventions: exit codes, usage errors, number and choice checks that name
// the option, and CLI11's parse errors turned into one line of our own ("unknown option --epoch
// (did you mean --epochs?)"). Everything here is stateless; safe from any thread.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace stoker::cli {

// Exit codes of the `stoker` command (README.md lists them).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;        // the command ran and failed (data, files, training)
inline constexpr int kExitUsage = 2;          // the command line means nothing: nothing was done
inline constexpr int kExitInterrupted = 130;  // stopped by SIGINT/SIGTERM

// A command line that cannot be run as written; what() is one line without the "stoker: "
// prefix. main() prints it and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Ends the command with exit code `code()` and prints nothing: what went wrong was said
// already (by the ranks `train --nproc` started). main() returns the code.
class ExitCode : public std::exception {
 public:
  explicit ExitCode(int code) : code_(code) {}
  int code() const { return code_; }
  const char* what() const noexcept override { return "exit code"; }

 private:
  int code_;
};

// "a, b or c".
std::string or_list(const std::vector<std::string>& items);

// The candidate nearest to `word` (edit distance with transpositions, or `word` a prefix of
// exactly one candidate) if it is near enough to be a typo of it; "" if none is.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// Checks for the text of an option's value, run by CLI11 before it converts the text. They
// throw UsageError naming `option`: "--lr: 'abc' is not a number", "--epochs must be at least
// 1", "--workers must be at most 1024".
//
// A whole number (decimal digits, optional sign) in [min, max]; `limit` says where max comes
// from ("the loader's limit"), or is empty.
CLI::Validator whole_number(const std::string& option, int64_t min, uint64_t max,
                            const std::string& limit = "");
// A finite real number above `min` (or equal to it when `min_inclusive`) and at most `max`.
CLI::Validator real_number(const std::string& option, double min, bool min_inclusive,
                           double max = std::numeric_limits<double>::max());
// One of `choices`; the error lists them and suggests the nearest.
CLI::Validator one_of(const std::string& option, const std::vector<std::string>& choices);

// add_option for a choice among `choices` (an enum's names: its table in util/enum_names.h
// gives them), checked by one_of; the "{}" in `help` becomes the choices ("a, b or c").
CLI::Option* add_choice(CLI::App& app, const std::string& name, std::string& value,
                        const std::string& help, const std::vector<std::string>& choices);

// A path: any valid UTF-8 text but the empty string, which a shell gives for an unset variable
// ("--log $LOG") and which would otherwise silently mean the option's default. Bytes that are
// not UTF-8 are refused up front: stoker writes its paths into JSON.
CLI::Validator path_value(const std::string& option);

// add_option for an integer field, its value checked by whole_number; max defaults to T's.
template <typename T>
CLI::Option* add_whole_number(CLI::App& app, const std::string& name, T& value,
                              const std::string& help, int64_t min,
                              uint64_t max = std::numeric_limits<T>::max(),
                              const std::string& limit = "") {
  return app.add_option(name, value, help)->check(whole_number(name, min, max, limit));
}

// The message for a CLI11 parse error that is not a request for help or version: which
// command was given and which of its options or subcommands was meant. `app` is the root
// command after the failed parse (it remembers what it had parsed).
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error);

}  // namespace stoker::cli
