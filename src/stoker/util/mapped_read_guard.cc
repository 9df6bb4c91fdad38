#include "stoker/util/mapped_read_guard.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "stoker/util/mapping_registry.h"
#include "stoker/util/status.h"

namespace stoker {
namespace {

// A thread holding a guard (0: a free slot) and the address of its first recovered fault.
struct GuardSlot {
  std::atomic<uintptr_t> thread{0};
  std::atomic<uintptr_t> fault{0};
};
static_assert(sizeof(pthread_t) <= sizeof(uintptr_t), "a pthread_t fits a uintptr_t");
static_assert(std::atomic<uintptr_t>::is_always_lock_free, "the handler must be signal-safe");

std::array<GuardSlot, MappedReadGuard::kMaxGuardedThreads> guards;
// The handler installed before ours, in one of two slots: an install writes the slot not in use,
// then publishes it, so the handler never reads a half-written one (installs are serialised by
// install_mutex).
std::array<struct sigaction, 2> previous_actions;
std::atomic<int> previous_slot{0};
std::mutex install_mutex;
// Set once a SIGBUS was passed on; any later one that is not recovered takes the default
// action. A SIGBUS passed on ends the process in all but odd cases, and a previous handler that
// hands the signal back to ours (faulthandler restores the handler it replaced, ours, and raises
// again, delivered once ours returns) must not start a loop.
std::atomic<bool> passed_on{false};
std::atomic<uintptr_t> page_bytes{4096};

uintptr_t this_thread() { return static_cast<uintptr_t>(pthread_self()); }

// Whether the calling thread holds a guard. Async-signal-safe.
bool guarded() {
  const uintptr_t self = this_thread();
  for (const GuardSlot& slot : guards)
    if (slot.thread.load() == self) return true;
  return false;
}

// Records `addr` as the calling thread's fault in each of its guards that has none yet.
void note_fault(const void* addr) {
  const uintptr_t self = this_thread();
  for (GuardSlot& slot : guards) {
    uintptr_t none = 0;
    if (slot.thread.load() == self)
      slot.fault.compare_exchange_strong(none, reinterpret_cast<uintptr_t>(addr));
  }
}

// Replaces [page of `addr`, end of the mapping) by zero pages if `addr` lies in a registered
// mapping, marking it changed. Async-signal-safe (mmap is a plain system call).
bool recover(const void* addr) {
  const void* base = nullptr;
  size_t size = 0;
  if (mark_changed_at(addr, &base, &size) == nullptr) return false;
  const uintptr_t page = page_bytes.load();
  const uintptr_t from = reinterpret_cast<uintptr_t>(addr) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(base) + size + page - 1) / page * page;
  return ::mmap(reinterpret_cast<void*>(from), end - from, PROT_READ,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
}

// Everything recover() does not take: the previous handler, or the default action.
void pass_on(int number, siginfo_t* info, void* context) {
  const struct sigaction& previous = previous_actions[previous_slot.load()];
  if (passed_on.exchange(true) || previous.sa_handler == SIG_DFL ||
      previous.sa_handler == SIG_IGN) {
    ::signal(number, SIG_DFL);
    ::raise(number);  // delivered when this handler returns
  } else if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(number, info, context);
  } else {
    previous.sa_handler(number);
  }
}

void on_sigbus(int number, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (info->si_code == BUS_ADRERR && guarded() && recover(info->si_addr)) {
    note_fault(info->si_addr);
    errno = saved_errno;
    return;  // the read is done again, from the zero pages
  }
  errno = saved_errno;
  pass_on(number, info, context);
}

}  // namespace

void install_mapped_read_fault_handler() {
  std::lock_guard<std::mutex> lock(install_mutex);
  struct sigaction current = {};
  if (::sigaction(SIGBUS, nullptr, &current) != 0)
    throw Error(io_error(std::string("cannot read the SIGBUS handler: ") + std::strerror(errno)));
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_sigbus) return;  // on top
  page_bytes.store(static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)));
  const int slot = 1 - previous_slot.load();
  previous_actions[slot] = current;
  previous_slot.store(slot);
  struct sigaction action = {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (::sigaction(SIGBUS, &action, nullptr) != 0)
    throw Error(
        io_error(std::string("cannot install the SIGBUS handler: ") + std::strerror(errno)));
}

MappedReadGuard::MappedReadGuard() : slot_(-1) {
  const uintptr_t self = this_thread();
  for (int i = 0; i < kMaxGuardedThreads; ++i) {
    uintptr_t free = 0;
    if (guards[i].thread.load(std::memory_order_relaxed) != 0) continue;
    if (guards[i].thread.compare_exchange_strong(free, self)) {
      guards[i].fault.store(0);  // no fault of this thread can come before the guard is made
      slot_ = i;
      return;
    }
  }
}

MappedReadGuard::~MappedReadGuard() {
  if (slot_ >= 0) guards[slot_].thread.store(0);
}

std::string MappedReadGuard::changed_file() const {
  if (slot_ < 0) return "";
  const uintptr_t fault = guards[slot_].fault.load();
  if (fault == 0) return "";
  const char* path = mapped_path_at(reinterpret_cast<const void*>(fault));
  return path != nullptr ? path : "a mapped file";
}

bool any_mapped_file_changed() { return changed_mappings() != 0; }

bool mapped_file_changed(const void* addr) {
  return any_mapped_file_changed() && mapping_changed_at(addr);
}

}  // namespace stoker
