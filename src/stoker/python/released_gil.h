#pragma once
// ReleasedGil and HeldGil: pybind11's gil_scoped_release and gil_scoped_acquire for a thread
// that may come back for the GIL while the interpreter ends.
//
// Once Python (3.11 to 3.13) finalizes, a thread other than the finalizing one that takes the
// GIL is ended by pthread_exit, a forced unwind; crossing a noexcept frame (a destructor that
// takes the GIL back, as gil_scoped_release's) it makes std::terminate abort the process:
// "terminate called without an active exception". Python 3.14 hangs such a thread instead
// (gh-87135); so do these guards: the thread parks for good (blocks on something never
// signalled, holding no lock of ours) and the process ends around it. Two checks:
// - ReleasedGil looks first: the interpreter finalizing now but not when the GIL was released
//   means this thread is not the finalizing one (that one holds the GIL as finalizing starts,
//   so it was not without it across the start); it parks without asking for the GIL.
// - The rest, finalizing starting after that look while the thread waits for the GIL (the
//   wait lasts while the main thread runs, so this is not rare), and every HeldGil (its thread
//   may not have released the GIL before, so a look tells nothing), is caught where CPython
//   ends the thread: util/park_on_thread_exit.h parks it there. That needs libstdc++; with
//   another C++ library only the look is left, and the window after it.

#include <pybind11/pybind11.h>

#include <optional>

#include "stoker/util/park_on_thread_exit.h"

namespace stoker::python {

// Whether the interpreter has begun to end (Py_FinalizeEx). Any thread, GIL or not.
inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// The GIL released for the scope (made with it held), taken back at its end unless the
// interpreter ends first (then the thread parks).
class ReleasedGil {
 public:
  ReleasedGil() : finalizing_(interpreter_finalizing()), state_(PyEval_SaveThread()) {}
  ReleasedGil(const ReleasedGil&) = delete;
  ReleasedGil& operator=(const ReleasedGil&) = delete;
  ~ReleasedGil() {
    if (!finalizing_ && interpreter_finalizing()) park_for_good();
    call_or_park([this] { PyEval_RestoreThread(state_); }, park_for_good);
  }

 private:
  const bool finalizing_;  // when released: then this thread is the finalizing one
  PyThreadState* const state_;
};

// The GIL taken for the scope, from any thread, unless the interpreter ends first (then the
// thread parks).
class HeldGil {
 public:
  HeldGil() {
    call_or_park([this] { gil_.emplace(); }, park_for_good);
  }

 private:
  std::optional<pybind11::gil_scoped_acquire> gil_;
};

}  // namespace stoker::python
