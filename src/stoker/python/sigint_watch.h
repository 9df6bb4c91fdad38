#pragma once
// SigintWatch: while alive, Ctrl-C (SIGINT) is seen by C++ code running without the GIL in the
// thread that made it, without taking the GIL or a thread of its own. Made on Python's main
// thread while SIGINT has a handler function (Python's own, unless the program set another),
// it puts a handler in front that marks `tripped()` and then calls that function, so Python
// still raises KeyboardInterrupt at its next check. Watches nest (an epoch of each of two
// loaders): the first made installs the handler, the last gone puts the function back, unless
// the program changed SIGINT's handler meanwhile (signal.signal), which it then keeps.
// Elsewhere (another thread, SIGINT ignored or default) it does nothing and never trips. For a
// long call in the caller's thread, such as a batch built inline: `arm()` before it and pass
// `tripped` as its cancel. A watch may live across many calls (an epoch's batches): it costs
// system calls when made and gone, none when armed. Main thread only, with the GIL held.

namespace stoker::python {

class SigintWatch {
 public:
  SigintWatch();
  ~SigintWatch();
  SigintWatch(const SigintWatch&) = delete;
  SigintWatch& operator=(const SigintWatch&) = delete;

  // Forgets an earlier SIGINT: tripped() tells of those from now on.
  static void arm();
  // Whether SIGINT arrived since the last arm().
  static bool tripped();

 private:
  bool counted_ = false;  // one of the watches that keep the handler installed
};

}  // namespace stoker::python
