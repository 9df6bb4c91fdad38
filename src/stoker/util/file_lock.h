#pragma once
// FileLock: an open file descriptor holding an advisory flock on a file, shared or exclusive,
// released when the object dies (or the process does, even on kill -9). The remote cache's
// pins, download locks and cache-wide lock (docs/REMOTE-DESIGN.md section 3). Move-only; not
// thread-safe.

#include <string>

#include "stoker/util/status.h"

namespace stoker {

enum class LockMode { kShared, kExclusive };

class FileLock {
 public:
  // Opens `path` (created with mode 0644 if `create`, else it must exist: kNotFound) and locks
  // it. With `wait` false, kAlreadyExists when another holder's lock conflicts; with `wait`
  // true, blocks until the lock is granted. kIoError for other failures, naming the path.
  static Result<FileLock> acquire(const std::string& path, LockMode mode, bool wait, bool create);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  int fd() const { return fd_; }
  // Gives up ownership: the caller closes the descriptor (which releases the lock).
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Whether `path` still names the file this lock holds (an evictor may have unlinked or
  // replaced it between the open and the lock).
  bool still_at(const std::string& path) const;

 private:
  explicit FileLock(int fd) : fd_(fd) {}

  int fd_ = -1;
};

}  // namespace stoker
