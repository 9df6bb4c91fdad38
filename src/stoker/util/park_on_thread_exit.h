#pragma once
// call_or_park(call, park): `call()`, except that a thread ended inside it by pthread_exit parks
// instead: `park()`, which does not return, runs where the thread's forced unwind is caught, so
// the unwinding goes no further. For a call that cannot be unwound through: one in a noexcept
// frame (a destructor), where the forced unwind makes std::terminate abort the process. The
// Python interpreter ends so a thread that takes the GIL back while it finalizes
// (python/released_gil.h). glibc unwinds pthread_exit as a foreign exception (abi::__forced_unwind
// to libstdc++); with another C++ library the call is made as it is. Any other exception passes.

#include <condition_variable>
#include <exception>
#include <mutex>

namespace stoker {

// Blocks the calling thread until the process ends.
[[noreturn]] inline void park_for_good() {
  std::mutex mutex;
  std::condition_variable never;
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) never.wait(lock);
}

template <typename Call, typename Park>
void call_or_park(const Call& call, const Park& park) {
#if defined(__GLIBCXX__)
  try {
    call();
  } catch (...) {
    // A forced unwind is a foreign exception, which current_exception cannot hold; catching
    // it by its name, abi::__forced_unwind&, binds a reference to null, which UBSan refuses.
    if (!std::current_exception())
      park();  // never returns: leaving the handler would end the thread's exit, which aborts
    throw;
  }
#else
  call();
#endif
}

}  // namespace stoker
