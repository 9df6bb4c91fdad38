#include "stoker/util/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stoker {

Result<DirectoryLock> DirectoryLock::acquire(const std::string& dir, const std::string& what) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open " + what + " '" + dir + "': " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      return already_exists(what + " '" + dir +
                            "' is in use by another run (it holds the directory's lock); wait "
                            "for it to end or use another directory");
    }
    return io_error("cannot lock " + what + " '" + dir + "': " + std::strerror(error));
  }
  return DirectoryLock(fd);
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace stoker
