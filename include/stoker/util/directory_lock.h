#pragma once
// DirectoryLock: an exclusive advisory lock (flock) on a directory, held while the object lives,
// so that two processes (or two owners in one process) never use one directory at the same
// time. It creates no file, and the kernel drops it when the process ends, even on kill -9.
// Move-only; not thread-safe.

#include <string>

#include "stoker/util/status.h"

namespace stoker {

class DirectoryLock {
 public:
  // Locks the existing directory `dir` without waiting: kAlreadyExists if another holder has
  // it, kIoError if it cannot be opened or locked. `what` names the directory in messages
  // ("checkpoint directory").
  static Result<DirectoryLock> acquire(const std::string& dir, const std::string& what);

  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}

  int fd_ = -1;
};

}  // namespace stoker
