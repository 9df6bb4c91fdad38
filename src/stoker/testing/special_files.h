#pragma once
// Test helpers for files that are not what they claim: FIFOs, devices, symlinks to them.

#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace stoker::testing {

// Creates a FIFO at `path` with no writer: open() for reading blocks on it unless O_NONBLOCK.
inline void make_fifo(const std::string& path) {
  if (::mkfifo(path.c_str(), 0644) != 0) throw std::runtime_error("mkfifo " + path + " failed");
}

// Ends the test process with SIGALRM if this guard is still alive after `seconds`, so that a
// test of something that could block (a FIFO) fails instead of hanging.
class HangGuard {
 public:
  explicit HangGuard(unsigned seconds = 30) { ::alarm(seconds); }
  ~HangGuard() { ::alarm(0); }
  HangGuard(const HangGuard&) = delete;
  HangGuard& operator=(const HangGuard&) = delete;
};

}  // namespace stoker::testing
