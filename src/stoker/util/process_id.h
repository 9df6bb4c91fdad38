#pragma once
// process_id(): this process's id, as getpid() gives it, without a system call each time (a
// loader checks it on every batch, so that a copy of it in a fork's child refuses to run): kept
// once read, and forgotten in the child of every fork() (pthread_atfork), where the child reads
// its own. A process made by clone() without fork()'s handlers keeps its parent's (none here).
// Thread-safe.

#include <sys/types.h>

namespace stoker {

pid_t process_id();

}  // namespace stoker
