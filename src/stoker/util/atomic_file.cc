#include "stoker/util/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "stoker/util/regular_file.h"

namespace stoker {
namespace {

constexpr size_t kBufferBytes = 1 << 20;

std::string errno_text() { return std::strerror(errno); }

// A new temporary name of `path` for this process, `path.tmp-<pid>.<n>`: unique among its
// writers, so that threads writing one path at once do not take each other's temporary.
std::string temp_name(const std::string& path) {
  static std::atomic<uint64_t> written{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "." + std::to_string(written++);
}

// Removes the temporaries of `path` that killed processes left (`path.tmp-<pid>[.<n>]` of a pid
// that no longer runs); a live writer's stays.
void remove_stale_temporaries(const std::string& path) {
  const std::filesystem::path target(path);
  const std::string prefix = target.filename().string() + ".tmp-";
  const std::filesystem::path parent = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t pid_end = name.find_first_not_of("0123456789", prefix.size());
    const bool numbered = pid_end != std::string::npos && name[pid_end] == '.' &&
                          pid_end + 1 < name.size() &&
                          name.find_first_not_of("0123456789", pid_end + 1) == std::string::npos;
    if (pid_end == prefix.size() || (pid_end != std::string::npos && !numbered)) continue;
    const long pid = std::atol(name.c_str() + prefix.size());
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

Status check_output_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return Status::ok();
    return invalid_argument(path + ": " + file_kind(st.st_mode) +
                            ", not a regular file: give a new path or a regular file to replace");
  }
  if (errno != ENOENT) return io_error(path + ": cannot stat: " + errno_text());
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    return io_error(path + ": cannot create: no such directory " + parent.string());
  return Status::ok();
}

Result<AtomicFile> AtomicFile::create(const std::string& path) {
  STOKER_RETURN_IF_ERROR(check_output_path(path));
  remove_stale_temporaries(path);
  std::string temp = temp_name(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path + ": cannot create: " + errno_text());
  return AtomicFile(path, std::move(temp), fd);
}

AtomicFile::AtomicFile(std::string path, std::string temp_path, int fd)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd) {
  buffer_.reserve(kBufferBytes);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::exchange(other.fd_, -1)),
      written_(other.written_),
      buffer_(std::move(other.buffer_)) {}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
  }
}

Status AtomicFile::append(const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (buffer_.size() + size > kBufferBytes) STOKER_RETURN_IF_ERROR(flush());
  if (size >= kBufferBytes) {
    buffer_.assign(bytes, bytes + size);
    return flush();
  }
  buffer_.insert(buffer_.end(), bytes, bytes + size);
  return Status::ok();
}

Status AtomicFile::flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(path_ + ": write failed: " + errno_text());
    }
    done += static_cast<size_t>(n);
  }
  written_ += buffer_.size();
  buffer_.clear();
  return Status::ok();
}

Status AtomicFile::commit() {
  if (fd_ < 0) return Status(StatusCode::kInternal, path_ + ": commit after close");
  STOKER_RETURN_IF_ERROR(flush());
  if (::fsync(fd_) != 0) return io_error(path_ + ": fsync failed: " + errno_text());
  ::close(std::exchange(fd_, -1));
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(temp_path_.c_str());
    return io_error(path_ + ": rename failed: " + why);
  }
  std::string dir = std::filesystem::path(path_).parent_path().string();
  return fsync_directory(dir.empty() ? "." : dir);
}

Status check_writable(const std::string& path) {
  // An AtomicFile destroyed uncommitted removes its temporary: the probe leaves nothing.
  return AtomicFile::create(path).status();
}

Status write_file_atomically(const std::string& path, const std::string& bytes) {
  STOKER_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path));
  STOKER_RETURN_IF_ERROR(file.append(bytes.data(), bytes.size()));
  return file.commit();
}

Status fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error(dir + ": cannot open directory: " + errno_text());
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return io_error(dir + ": fsync failed: " + errno_text());
  return Status::ok();
}

Result<std::string> read_file(const std::string& path, uint64_t max_bytes) {
  STOKER_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
  const auto too_large = [&] {
    return invalid_argument(path + ": larger than " + std::to_string(max_bytes) +
                            " bytes, the limit for this file");
  };
  if (file.size() > max_bytes) return too_large();
  std::string text;
  text.reserve(file.size());
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(file.fd(), chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(path + ": read failed: " + errno_text());
    }
    if (n == 0) return text;
    // A file that grows while it is read (or reports no size, as /proc does) stays bounded.
    if (text.size() + static_cast<uint64_t>(n) > max_bytes) return too_large();
    text.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace stoker
