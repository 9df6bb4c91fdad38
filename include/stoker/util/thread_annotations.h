#pragma once
// Thread rules the compiler checks (docs/DESIGN.md contract 10). Clang's thread-safety analysis
// (-Wthread-safety) proves that fields marked STOKER_GUARDED_BY(mu) are touched only with `mu`
// held, that functions marked STOKER_REQUIRES(mu) are called with it held and those marked
// STOKER_EXCLUDES(mu) without. The macros expand to nothing on other compilers.
//
// The analysis needs a mutex type that declares itself a capability, which libstdc++'s
// std::mutex does not: `Mutex` is a std::mutex that does, and `MutexLock` the one lock over it
// (a std::unique_lock: scoped, can unlock and relock, waits on a std::condition_variable).
// The analysis cannot see that a wait's predicate runs with the mutex held: the lambda says so.
//
//   Mutex mutex_;
//   int count_ STOKER_GUARDED_BY(mutex_) = 0;
//   void add() STOKER_EXCLUDES(mutex_) { MutexLock lock(mutex_); ++count_; }
//   void wait_for_one() STOKER_EXCLUDES(mutex_) {
//     MutexLock lock(mutex_);
//     lock.wait(cv_, [&]() STOKER_REQUIRES(mutex_) { return count_ > 0; });
//   }
//
// Thread-safety: a Mutex is a std::mutex; a MutexLock belongs to the thread that made it.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#if defined(__clang__)
#define STOKER_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define STOKER_THREAD_ANNOTATION(x)
#endif

#define STOKER_CAPABILITY(name) STOKER_THREAD_ANNOTATION(capability(name))
#define STOKER_SCOPED_CAPABILITY STOKER_THREAD_ANNOTATION(scoped_lockable)
#define STOKER_GUARDED_BY(mu) STOKER_THREAD_ANNOTATION(guarded_by(mu))
#define STOKER_PT_GUARDED_BY(mu) STOKER_THREAD_ANNOTATION(pt_guarded_by(mu))
#define STOKER_REQUIRES(...) STOKER_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define STOKER_EXCLUDES(...) STOKER_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define STOKER_ACQUIRE(...) STOKER_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define STOKER_RELEASE(...) STOKER_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

namespace stoker {

// A std::mutex the analysis knows. Not copyable or movable.
class STOKER_CAPABILITY("mutex") Mutex {
 public:
  void lock() STOKER_ACQUIRE() { mutex_.lock(); }
  void unlock() STOKER_RELEASE() { mutex_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mutex_;
};

// Holds a Mutex from construction to destruction, except between unlock() and lock().
class STOKER_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) STOKER_ACQUIRE(mutex) : lock_(mutex.mutex_) {}
  ~MutexLock() STOKER_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() STOKER_ACQUIRE() { lock_.lock(); }
  void unlock() STOKER_RELEASE() { lock_.unlock(); }

  // std::condition_variable::wait(lock, ready): releases the mutex while waiting, holds it
  // again whenever it calls `ready` and on return.
  template <typename Predicate>
  void wait(std::condition_variable& cv, Predicate ready) {
    cv.wait(lock_, std::move(ready));
  }
  // The same until `deadline`; returns ready() (false: timed out).
  template <typename Clock, typename Duration, typename Predicate>
  bool wait_until(std::condition_variable& cv,
                  const std::chrono::time_point<Clock, Duration>& deadline, Predicate ready) {
    return cv.wait_until(lock_, deadline, std::move(ready));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace stoker
