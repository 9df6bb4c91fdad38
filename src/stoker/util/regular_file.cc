#include "stoker/util/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace stoker {
namespace {

Status not_regular(const std::string& path, mode_t mode) {
  return invalid_argument(path + ": not a regular file (" + file_kind(mode) + ")");
}

}  // namespace

const char* file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

Result<struct stat> stat_regular(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return not_found(path + ": no such file");
    return io_error(path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return not_regular(path, st.st_mode);
  return st;
}

Result<RegularFile> RegularFile::open(const std::string& path) {
  // stat() first, so that a device is never opened (opening some has side effects); then
  // O_NONBLOCK, so that a FIFO swapped in meanwhile cannot block open(), and fstat() to check
  // what was opened.
  STOKER_ASSIGN_OR_RETURN(struct stat st, stat_regular(path));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return not_found(path + ": no such file");
    return io_error(path + ": cannot open: " + std::strerror(errno));
  }
  RegularFile file(fd, 0);
  if (::fstat(fd, &st) != 0) return io_error(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return not_regular(path, st.st_mode);
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    return io_error(path + ": cannot clear O_NONBLOCK: " + std::strerror(errno));
  file.size_ = static_cast<uint64_t>(st.st_size);
  return file;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

int RegularFile::release() { return std::exchange(fd_, -1); }

}  // namespace stoker
