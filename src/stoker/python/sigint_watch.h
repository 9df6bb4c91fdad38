#pragma once
// SigintWatch: while alive, Ctrl-C (SIGINT) is seen by C++ code running without the GIL in the
// thread that made it, without taking the GIL or a thread of its own. Made on Python's main
// thread while SIGINT has a handler function (Python's own, unless the program set another),
// it puts a handler in front that marks `tripped()` and then calls that function, so Python
// still raises KeyboardInterrupt at its next check; its destructor puts the function back.
// Elsewhere (another thread, SIGINT ignored or default) it does nothing and never trips. For a
// long call in the caller's thread, such as a batch built inline: pass `tripped` as its cancel.
// One at a time (the main thread's).

namespace stoker::python {

class SigintWatch {
 public:
  SigintWatch();
  ~SigintWatch();
  SigintWatch(const SigintWatch&) = delete;
  SigintWatch& operator=(const SigintWatch&) = delete;

  // Whether SIGINT arrived since this watch was made.
  static bool tripped();

 private:
  bool installed_ = false;
};

}  // namespace stoker::python
