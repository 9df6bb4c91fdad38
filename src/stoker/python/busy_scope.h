#pragma once
// BusyScope: one thread at a time in a bound object. A binding call that releases the GIL (a
// loader waiting for a batch, a writer writing a record) marks its object busy for the call;
// another thread calling into the object meanwhile gets RuntimeError instead of racing.

#include <atomic>
#include <stdexcept>
#include <string>

namespace stoker::python {

// Marks `busy` for the scope; throws std::runtime_error(`message`) (RuntimeError in Python) if
// another scope already holds it. `busy` must outlive the scope.
class BusyScope {
 public:
  BusyScope(std::atomic<bool>& busy, const char* message) : busy_(busy) {
    if (busy_.exchange(true)) throw std::runtime_error(message);
  }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
  ~BusyScope() { busy_.store(false); }

 private:
  std::atomic<bool>& busy_;
};

}  // namespace stoker::python
