#pragma once
// RegularFile: a file descriptor opened for reading that is known to name a regular file (RAII).
// Anything else a path may name — a FIFO, a device such as /dev/zero, a directory, a socket, or
// a symbolic link to one of them — is refused with one line naming the path, without blocking
// on it and before reading a byte. Move-only; not thread-safe.

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

// What a file of stat mode `mode` is, for an error message: "a directory", "a FIFO", "a
// character device", "a block device", "a socket", "a symbolic link", "a regular file".
const char* file_kind(unsigned mode);

// The stat() of `path`, a regular file, which is not opened: RegularFile::open's errors.
Result<struct stat> stat_regular(const std::string& path);

class RegularFile {
 public:
  // Opens `path` read-only. kNotFound if it does not exist, kInvalidArgument if it is not a
  // regular file (the error says what it is), kIoError if the system refuses it.
  static Result<RegularFile> open(const std::string& path);

  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&&) = delete;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  // The size when opened.
  uint64_t size() const { return size_; }
  // Gives up ownership: the caller closes the returned descriptor.
  int release();

 private:
  RegularFile(int fd, uint64_t size) : fd_(fd), size_(size) {}

  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace stoker
