#pragma once
// AtomicFile: crash-safe file creation (docs/DESIGN.md contract 7). Bytes go to a temporary name
// beside the target; commit() fsyncs, renames over the target and fsyncs the directory. A file
// destroyed without commit() removes its temporary, so a reader never sees a half-written file.
// The temporary is `<path>.tmp-<pid>`; one left by a killed process is removed by the next
// AtomicFile for the same path. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// Whether a file may be written at `path`: a new path in an existing directory, or an existing
// regular file. Anything else there — a device such as /dev/full, a FIFO, a directory, a socket,
// a symbolic link — is kInvalidArgument naming the path and what it is (a rename would replace
// it); a missing directory is kIoError. Does not check permissions.
Status check_output_path(const std::string& path);

// Whether a file can be written at `path` now: check_output_path, then a temporary created in
// its directory and removed. Run before long work whose result goes to `path`, so that the
// result is not lost to a directory that refuses it. kIoError naming the path.
Status check_writable(const std::string& path);

class AtomicFile {
 public:
  // Creates the temporary file for `path` (which must pass check_output_path), after removing
  // the temporaries of `path` whose process is gone.
  static Result<AtomicFile> create(const std::string& path);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // Appends bytes (buffered).
  Status append(const void* data, size_t size);
  // Bytes appended so far.
  uint64_t size() const { return written_ + buffer_.size(); }
  // Flushes, fsyncs, renames to the target and fsyncs the directory.
  Status commit();

  const std::string& path() const { return path_; }

 private:
  AtomicFile(std::string path, std::string temp_path, int fd);
  Status flush();

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t written_ = 0;
  std::vector<uint8_t> buffer_;
};

// Writes `bytes` to `path` through an AtomicFile.
Status write_file_atomically(const std::string& path, const std::string& bytes);

// fsyncs a directory so that renames inside it are durable.
Status fsync_directory(const std::string& dir);

// Default limit of read_file(): small files only.
constexpr uint64_t kReadFileMaxBytes = uint64_t{64} << 20;

// Reads a whole regular file into a string. A path that is not a regular file (a FIFO, a device,
// a directory, or a symlink to one) is kInvalidArgument without blocking on it or reading it; so
// is a file larger than `max_bytes`, found before reading it (or, if it grows, once it passes
// the limit). The error names the path.
Result<std::string> read_file(const std::string& path, uint64_t max_bytes = kReadFileMaxBytes);

}  // namespace stoker
