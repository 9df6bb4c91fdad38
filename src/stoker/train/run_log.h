#pragma once
// RunLog: the JSONL file a training run appends its records to (`stoker train --log FILE`): one
// JSON object per line, each with its kind and time — a "run" record first (the resolved
// configuration, versions, machine), then "epoch" records and, with --log-every, "step" records —
// flushed as it is written, and kept consistent with the checkpoints when a run resumes after a
// crash. Never a partial line: a write cut short (a full disk) is cut back to the line before
// it, and a log that ends in a torn line is cut back to its last newline when it is opened, so
// that no record is appended onto one. Move-only; not thread-safe (the training thread writes
// it).

#include <unistd.h>

#include <cstdint>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

class RunLog {
 public:
  // Opens `path` for appending, creating it if new, and cuts a torn last line (after the last
  // newline) off. kInvalidArgument if it names something other than a regular file (a device
  // such as /dev/full, a FIFO, a directory, a link) or a file that is not a log (check);
  // kIoError if it cannot be opened.
  static Result<RunLog> open(const std::string& path);

  // Whether `path` may be appended to as a log: missing, empty, or every line a record this class
  // wrote (a last line torn by a crash included). kInvalidArgument naming the file and the first
  // line that is not, so that a file of the user's (`--log notes.txt`) is neither appended to
  // nor cut; ok for what is not a regular file (open() says what it is).
  static Status check(const std::string& path);

  RunLog(RunLog&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
    other.fd_ = -1;
  }
  RunLog& operator=(RunLog&&) = delete;
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;
  ~RunLog() {
    if (fd_ >= 0) ::close(fd_);
  }

  // Appends the JSON object `json` (one line, starting with '{') as a record of kind `kind`
  // ("run", "epoch", "step"): its first keys are "record": kind and "time": now (utc_timestamp).
  // Written whole, at once. kIoError naming the file if the system refuses the write (a full
  // disk, a file size limit); what part of the line was written is then cut off again.
  Status append(const std::string& kind, const std::string& json);

  // For a run resuming from a checkpoint taken after `steps` optimizer steps: removes from the
  // end of the log at `path` the records of steps the checkpoint does not hold (a "steps" or
  // "step" value above `steps`: written after it, by the run that crashed) and a last line torn
  // by the crash, so that the resumed run does not log them twice. Records before them, and
  // other runs' records, stay. A missing file is fine; one that is not a log is refused (check).
  static Status trim_for_resume(const std::string& path, int64_t steps);

  const std::string& path() const { return path_; }

  // The current time as ISO 8601 in UTC with milliseconds: "2024-05-01T12:34:56.789Z".
  static std::string utc_timestamp();

 private:
  RunLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;  // O_APPEND
};

}  // namespace stoker
