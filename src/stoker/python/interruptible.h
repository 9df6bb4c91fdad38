#pragma once
// interruptible(call): a long C++ call made from Python that Ctrl-C stops. `call(cancelled)` runs
// on a thread of its own while the calling thread, without the GIL, waits for it and every
// kInterruptCheck takes the GIL to run Python's signal handlers. Once one raises (SIGINT's
// KeyboardInterrupt), `cancelled()` turns true, the call is waited for (it polls `cancelled`,
// so it ends promptly) and the handler's exception is raised instead of the call's result.
// Call with the GIL held; `cancelled` may be called from any thread.

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "stoker/python/released_gil.h"

namespace stoker::python {

inline constexpr std::chrono::milliseconds kInterruptCheck{100};

template <typename T>
T interruptible(const std::function<T(const std::function<bool()>& cancelled)>& call) {
  namespace py = pybind11;
  std::atomic<bool> interrupted{false};
  std::optional<T> result;
  std::exception_ptr failed;
  std::unique_ptr<py::error_already_set> raised;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  {
    ReleasedGil no_gil;
    std::thread worker([&] {
      try {
        result.emplace(call([&] { return interrupted.load(); }));
      } catch (...) {
        failed = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
      finished.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, kInterruptCheck, [&] { return done; })) {
      if (raised) continue;
      lock.unlock();
      {
        HeldGil gil;
        if (PyErr_CheckSignals() != 0) raised = std::make_unique<py::error_already_set>();
      }
      if (raised) interrupted = true;
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (raised) throw std::move(*raised);
  if (failed) std::rethrow_exception(failed);
  return std::move(*result);
}

}  // namespace stoker::python
