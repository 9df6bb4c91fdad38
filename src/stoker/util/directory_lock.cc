#include "stoker/util/directory_lock.h"

#include <unistd.h>

#include "stoker/util/file_lock.h"

namespace stoker {

Result<DirectoryLock> DirectoryLock::acquire(const std::string& dir, const std::string& what) {
  Result<FileLock> lock = FileLock::acquire(dir, LockMode::kExclusive, /*wait=*/false,
                                            /*create=*/false);
  if (lock.is_ok()) return DirectoryLock(lock.value().release());
  if (lock.status().code() == StatusCode::kAlreadyExists) {
    return already_exists(what + " '" + dir +
                          "' is in use by another run (it holds the directory's lock); wait "
                          "for it to end or use another directory");
  }
  return io_error("cannot lock " + what + " '" + dir + "': " + lock.status().message());
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace stoker
