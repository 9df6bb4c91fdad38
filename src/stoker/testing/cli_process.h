#pragma once
// CliProcess: the built `stoker` binary (build_paths.h) running
// as a child process, its stdout and stderr going to files in a test's directory, so that a test
// can watch its output, signal it (a real SIGINT or SIGKILL to a real process) and wait for it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

extern char** environ;

namespace stoker::testing {

class CliProcess {
 public:
  // Starts `stoker ARGS` (the subcommand first) with `env` ("NAME=value") added to the
  // environment.
  CliProcess(const std::vector<std::string>& args, const TempDir& dir,
             const std::vector<std::string>& env = {})
      : out_path_(dir / ("out-" + std::to_string(++runs_))), err_path_(out_path_ + ".err") {
    std::vector<std::string> argv_strings = {kStokerCliPath};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = env;
    std::vector<char*> envp;
    for (std::string& s : env_strings) envp.push_back(s.data());
    for (char** e = environ; *e; ++e) envp.push_back(*e);
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    const int error = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) throw std::runtime_error("cannot start " + argv_strings[0]);
  }
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;
  ~CliProcess() {
    if (!exit_code_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  // `args` with the subcommand `command` in front.
  static std::vector<std::string> with_command(const std::string& command,
                                               std::vector<std::string> args) {
    args.insert(args.begin(), command);
    return args;
  }

  std::string out() const { return read_file(out_path_).value_or_throw(); }
  std::string err() const { return read_file(err_path_).value_or_throw(); }
  // Waits up to a minute for `text` to appear on stdout.
  bool wait_for_output(const std::string& text) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (out().find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  void signal(int number) const { ::kill(pid_, number); }
  pid_t pid() const { return pid_; }
  // The exit code if the process ends within `timeout`, else nullopt (it runs on).
  std::optional<int> wait_for(std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exit_code_) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      } else if (std::chrono::steady_clock::now() > deadline) {
        return std::nullopt;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    return exit_code_;
  }
  // The exit code (128 + signal number if killed); waits for it the first time.
  int wait() const {
    if (!exit_code_) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return *exit_code_;
  }

 private:
  static inline int runs_ = 0;
  std::string out_path_, err_path_;
  pid_t pid_ = 0;
  mutable std::optional<int> exit_code_;
};

// A run that failed with exit code 1 and one line on stderr containing `words`.
inline void expect_one_line_error(const CliProcess& cli, const std::string& words) {
  EXPECT_EQ(cli.wait(), 1) << cli.err();
  const std::string err = cli.err();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find(words), std::string::npos) << err;
}

}  // namespace stoker::testing
