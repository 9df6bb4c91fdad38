#pragma once
// Test helpers for running the built `stoker` binary (build_paths.h) and checking its errors.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker::testing {

struct RunResult {
  int exit_code;
  std::string out;
  std::string err;
};

// Runs `stoker ARGS` through the shell; `env` ("NAME=value ...") is set for it. stderr goes
// through a file in `dir`.
inline RunResult run(const std::string& args, const TempDir& dir, const std::string& env = "") {
  const std::string err_path = dir / "stderr.txt";
  std::string command = env + " " + kStokerCliPath + " " + args + " 2>" + err_path;
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = read_file(err_path).value_or_throw();
  return result;
}

// A failed run that printed one line on stderr containing `words`, and was not killed.
inline void expect_one_line_error(const RunResult& r, const std::string& words) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.exit_code, 128) << "killed by a signal";
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
}

}  // namespace stoker::testing
