#pragma once
// CancelScope: while alive, `cancelled` is its thread's cancellation in scope, for a blocking
// call deep in a chain that cannot be handed it as an argument: a remote video's bytes read from
// FFmpeg's I/O callback (access/remote_video_opener.cc) under an operation that has the
// sample's cancellation (SampleInput::cancelled). Scopes nest: the outer one is back when the
// inner one ends. A scope belongs to the thread that made it. Also for a long loop that has no
// Status to return, such as an epoch's order of 10^8 samples built under Ctrl-C's watch
// (python/loader_binding.cc): it calls poll_cancellation at each step.

#include <cstdint>
#include <functional>

namespace stoker {

class CancelScope {
 public:
  // `cancelled` (may be null: nothing cancels) outlives the scope.
  explicit CancelScope(const std::function<bool()>* cancelled);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::function<bool()>* outer_;
};

// This thread's cancellation in scope: the innermost scope's, or an empty function (never
// cancelled) outside any scope or in one made with null. Valid while that scope lives.
const std::function<bool()>& cancellation_in_scope();

// Throws Error (kCancelled, "cancelled") if this thread's cancellation in scope is set.
void throw_if_cancelled();

// For step `step` of a loop: throw_if_cancelled() every 2^16 steps (step 0 included), a call
// too rare to slow the loop and frequent enough to end it within milliseconds.
inline void poll_cancellation(int64_t step) {
  if ((step & 0xffff) == 0) throw_if_cancelled();
}

}  // namespace stoker
