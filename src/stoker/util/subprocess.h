#pragma once
// Running another program without a shell: its arguments go to it as they are (spaces, quotes
// and semicolons included), nothing is interpreted. Thread-safe (each call owns its child).

#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// What a finished child did.
struct ProcessResult {
  int exit_code = 0;  // its exit status, or 128 + the signal that ended it
  std::string out;    // everything it wrote to stdout
  std::string err;    // everything it wrote to stderr
};

// Runs argv[0] (looked up in PATH if it has no '/') with `argv`, stdin from /dev/null, and waits
// for it, collecting stdout and stderr. kNotFound if the program cannot be started (the message
// names it), kIoError if the pipes fail. A child that runs and fails is a result, not an error.
Result<ProcessResult> run_process(const std::vector<std::string>& argv);

}  // namespace stoker
