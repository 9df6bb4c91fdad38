#pragma once
// Test helper: runs src/stoker/testing/torchvision_reference.py (build_paths.h) with STOKER_PYTHON
// (MKL pinned: reference_python.h), which has torch, torchvision, PIL and SciPy. A missing
// interpreter or module fails the test: CI installs them (scripts/setup.sh).

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/reference_python.h"

namespace stoker::image::test {

// The script's stdout for `args`; a failed run (exit status not 0) fails the calling test.
inline std::string run_torchvision_reference(const std::string& args) {
  const std::string command = stoker::testing::reference_python() + " " +
                              stoker::testing::kSourceDir +
                              "/src/stoker/testing/torchvision_reference.py " + args;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return "";
  }
  std::string out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << command << " failed (" << status << "); output: " << out;
  return out;
}

}  // namespace stoker::image::test
