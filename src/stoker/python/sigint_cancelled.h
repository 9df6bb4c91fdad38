#pragma once
// cancelled_by_sigint(call): `call()`, a long C++ call that cannot be handed a cancel (an
// epoch's order, 10^8 samples: seconds), run without the GIL with Ctrl-C ending it. SigintWatch
// is the thread's cancellation in scope (util/cancel_scope.h), which the call's loops poll;
// their Error (kCancelled) becomes Python's own KeyboardInterrupt. Called with the GIL; off the
// main thread nothing interrupts it (SigintWatch's rule).

#include <pybind11/pybind11.h>

#include <functional>

#include "stoker/python/released_gil.h"
#include "stoker/python/sigint_watch.h"
#include "stoker/util/cancel_scope.h"
#include "stoker/util/status.h"

namespace stoker::python {

template <typename Call>
auto cancelled_by_sigint(const Call& call) {
  static const std::function<bool()> tripped = SigintWatch::tripped;
  try {
    SigintWatch watch;
    SigintWatch::arm();  // a nested watch (an inline epoch's) may hold an earlier SIGINT
    ReleasedGil release;
    CancelScope scope(&tripped);
    return call();
  } catch (const Error& e) {
    if (e.status().code() == StatusCode::kCancelled && PyErr_CheckSignals() != 0)
      throw pybind11::error_already_set();
    throw;
  }
}

}  // namespace stoker::python
