#include "stoker/python/sigint_watch.h"

#include <Python.h>
#include <pybind11/pybind11.h>
#include <signal.h>

#include <atomic>

namespace stoker::python {
namespace {

static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
std::atomic<bool> g_tripped{false};
struct sigaction g_previous;  // the handler chained to, while a watch is installed
int g_watches = 0;            // watches alive that installed or found the handler installed

void on_sigint(int sig, siginfo_t* info, void* context) {
  g_tripped.store(true, std::memory_order_relaxed);
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else {
    g_previous.sa_handler(sig);
  }
}

// Whether the calling thread is Python's main thread, the one that runs signal handlers (asked
// of `threading`, the C API having no public call for it: CPython 3.13 hid _PyOS_IsMainThread).
// With the GIL held; false where `threading` cannot say (the interpreter shutting down).
bool is_main_thread() {
  namespace py = pybind11;
  try {
    const py::object main = py::module_::import("threading").attr("main_thread")();
    return main.attr("ident").cast<unsigned long>() == PyThread_get_thread_ident();
  } catch (const py::error_already_set&) {
    return false;
  }
}

}  // namespace

SigintWatch::SigintWatch() {
  // Only where Python runs its signal handlers: the main thread, with the GIL, so the count
  // needs no lock, and nothing else changes SIGINT's handler from Python meanwhile.
  if (!is_main_thread()) return;
  if (g_watches > 0) {
    counted_ = true;
    ++g_watches;
    return;
  }
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  const bool is_function = (current.sa_flags & SA_SIGINFO) != 0 ||
                           (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
  if (!is_function) return;
  g_previous = current;
  g_tripped.store(false, std::memory_order_relaxed);
  struct sigaction watch = current;
  watch.sa_sigaction = on_sigint;
  watch.sa_flags = current.sa_flags | SA_SIGINFO;
  counted_ = sigaction(SIGINT, &watch, nullptr) == 0;
  if (counted_) ++g_watches;
}

SigintWatch::~SigintWatch() {
  if (!counted_ || --g_watches > 0) return;
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
      current.sa_sigaction == on_sigint)
    sigaction(SIGINT, &g_previous, nullptr);
}

void SigintWatch::arm() { g_tripped.store(false, std::memory_order_relaxed); }

bool SigintWatch::tripped() { return g_tripped.load(std::memory_order_relaxed); }

}  // namespace stoker::python
