#pragma once
// Stopwatch: the seconds since it started, on the steady clock. Plain value; its reads are
// thread-safe.

#include <chrono>

namespace stoker {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace stoker
