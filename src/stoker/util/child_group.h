#pragma once
// ChildGroup: programs started together and watched together — the ranks of a local
// multi-process run (`stoker train --nproc`) or of a test — with deadlines, so that a caller
// never waits forever on a child that hangs. The children share a process group of their own
// (a terminal's Ctrl-C reaches the parent, which decides what to forward), die with a SIGKILL
// if the thread that started them ends first, and are killed and reaped when the ChildGroup is
// destroyed.
//
// Thread-safety: use a ChildGroup from the thread that created it (a child's death signal is
// tied to the thread that started it).

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// One program to start. Plain value.
struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH if it has no '/'
  std::vector<std::string> env;   // "NAME=value" set on top of this process's environment
  // "": stdout and stderr are this process's; else both go to this file (created or truncated).
  std::string output_path;
};

// How the children ended, in the order they were started.
struct ChildOutcome {
  std::vector<int> exit_codes;       // exit status, or 128 + the signal that ended it
  std::vector<double> exit_seconds;  // when each was seen to end, from the start of wait()
  int first_failure = -1;            // index of the first child seen to exit non-zero, -1 if none
  bool timed_out = false;            // some were killed at a deadline
};

class ChildGroup {
 public:
  ChildGroup() = default;
  ~ChildGroup();  // kills (SIGKILL) and reaps the children still running
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;

  // Starts `spec` (its stdin is /dev/null). kInvalidArgument for an empty argv, kIoError if the
  // output file cannot be opened or the process not created, kNotFound if the program cannot
  // be run (the message names it; the child then counts as exited with 127).
  Status start(const ChildSpec& spec);
  size_t size() const { return children_.size(); }
  pid_t pid(size_t i) const { return children_[i].pid; }

  // Waits until every child has exited, `timeout` has passed, or `grace` has passed since a
  // child first exited non-zero (its peers get that long to end on their own); then sends
  // SIGKILL to those still running and reaps them. While waiting, a `*forward` that turns
  // non-zero is sent once to the children as that signal (null: nothing forwarded).
  ChildOutcome wait(std::chrono::milliseconds timeout, std::chrono::milliseconds grace,
                    const std::atomic<int>* forward = nullptr);

 private:
  struct Child {
    pid_t pid = -1;
    bool running = false;
    int exit_code = 0;
    std::chrono::steady_clock::time_point ended;
  };
  // Reaps child `c` if it has exited (noting when); blocks if `block`.
  void reap(Child& c, bool block);
  void kill_running();

  std::vector<Child> children_;
  pid_t group_ = 0;  // process group of the children (the first one's pid)
};

}  // namespace stoker
