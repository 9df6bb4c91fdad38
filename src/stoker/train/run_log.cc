#include "stoker/train/run_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

// Logs with a record per step grow large; the trim reads the whole file.
constexpr uint64_t kMaxLogBytes = uint64_t{4} << 30;

// How every line append() writes starts.
constexpr std::string_view kRecordStart = R"({"record":")";

// True if `line` (without its newline) could be a record append() wrote: whole (`torn`: false)
// or cut short by a crash or a full disk.
bool record_line(std::string_view line, bool torn) {
  if (line.size() < kRecordStart.size())
    return torn && kRecordStart.compare(0, line.size(), line) == 0;
  return line.compare(0, kRecordStart.size(), kRecordStart) == 0 && (torn || line.back() == '}');
}

// True if `line` is a complete record of a step after `steps`, or not a JSON object at all (torn).
bool after_checkpoint(const std::string& line, int64_t steps) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return true;
  for (const char* key : {"steps", "step"}) {
    auto it = j.find(key);
    if (it != j.end() && it->is_number_integer() && it->get<int64_t>() > steps) return true;
  }
  return false;
}

}  // namespace

Status RunLog::check(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return Status::ok();
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read log file '" + path + "': " + std::strerror(errno));
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!record_line(line, /*torn=*/in.eof())) {
      return invalid_argument(fmt::format(
          "{} is not a stoker log (line {} is not a record stoker wrote): it is kept as it is; "
          "give a new file, or a log of stoker's to append to",
          path, number));
    }
  }
  if (in.bad()) return io_error("cannot read log file '" + path + "': " + std::strerror(errno));
  return Status::ok();
}

Result<RunLog> RunLog::open(const std::string& path) {
  STOKER_RETURN_IF_ERROR(check_output_path(path));
  STOKER_RETURN_IF_ERROR(check(path));
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot open log file '" + path + "': " + std::strerror(errno));
  RunLog log(path, fd);
  // A torn last line (a crash or a full disk mid-write in an earlier run): cut back to the last
  // newline, so that this run's records start on a line of their own.
  const off_t size = ::lseek(fd, 0, SEEK_END);
  off_t end = size;
  char byte = '\n';
  while (end > 0 && ::pread(fd, &byte, 1, end - 1) == 1 && byte != '\n') --end;
  if (end != size && ::ftruncate(fd, end) != 0)
    return io_error("cannot cut the torn last line of log file '" + path +
                    "': " + std::strerror(errno));
  return log;
}

std::string RunLog::utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03}Z", text, ms);
}

Status RunLog::append(const std::string& kind, const std::string& json) {
  if (json.empty() || json.front() != '{')
    return invalid_argument("a log record must be a JSON object");
  const std::string body = json.size() > 2 ? "," + json.substr(1) : "}";
  const std::string line =
      fmt::format("{{\"record\":\"{}\",\"time\":\"{}\"{}\n", kind, utc_timestamp(), body);
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  size_t done = 0;
  int error = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (error == 0) return Status::ok();
  // Never leave a partial line for the next record to be appended onto.
  if (done > 0 && before >= 0 && ::ftruncate(fd_, before) != 0) {
    // the write's own error is the one to report
  }
  return io_error("cannot write log file '" + path_ + "': " + std::strerror(error));
}

Status RunLog::trim_for_resume(const std::string& path, int64_t steps) {
  if (::access(path.c_str(), F_OK) != 0) return Status::ok();
  STOKER_RETURN_IF_ERROR(check(path));
  STOKER_ASSIGN_OR_RETURN(std::string text, read_file(path, kMaxLogBytes));
  size_t keep = text.size();  // bytes of the log that stay
  while (keep > 0) {
    // The last line before `keep` (a final line without its newline was torn by a crash).
    const size_t end = text[keep - 1] == '\n' ? keep - 1 : keep;
    const size_t start = end == 0 ? std::string::npos : text.rfind('\n', end - 1);
    const size_t begin = start == std::string::npos ? 0 : start + 1;
    const bool torn = end == keep;
    if (!torn && !after_checkpoint(text.substr(begin, end - begin), steps)) break;
    keep = begin;
  }
  if (keep == text.size()) return Status::ok();
  if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0)
    return io_error("cannot trim log file '" + path + "': " + std::strerror(errno));
  return Status::ok();
}

}  // namespace stoker
