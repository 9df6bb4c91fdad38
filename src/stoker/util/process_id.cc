#include "stoker/util/process_id.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace stoker {
namespace {

std::atomic<pid_t> known{0};  // 0: not read since the process (or a fork's child) began

void forget_in_child() { known.store(0, std::memory_order_relaxed); }

}  // namespace

pid_t process_id() {
  static const int registered = pthread_atfork(nullptr, nullptr, forget_in_child);
  static_cast<void>(registered);
  pid_t id = known.load(std::memory_order_relaxed);
  if (id == 0) {
    id = ::getpid();
    known.store(id, std::memory_order_relaxed);
  }
  return id;
}

}  // namespace stoker
