#pragma once
// RunLog: the JSONL file a training run appends its records to (`stoker train --log FILE`): one
// JSON object per line, each with its kind and time — a "run" record first (the resolved
// configuration, versions, machine), then "epoch" records and, with --log-every, "step" records —
// flushed as it is written, and kept consistent with the checkpoints when a run resumes after a
// crash. Move-only; not thread-safe (the training thread writes it).

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

class RunLog {
 public:
  // Opens `path` for appending, creating it if new. kInvalidArgument if it names something other
  // than a regular file (a device such as /dev/full, a FIFO, a directory, a link); kIoError if it
  // cannot be opened.
  static Result<RunLog> open(const std::string& path);

  // Appends the JSON object `json` (one line, starting with '{') as a record of kind `kind`
  // ("run", "epoch", "step"): its first keys are "record": kind and "time": now (utc_timestamp).
  // Flushed. kIoError naming the file if the system refuses the write (a full disk, a file size
  // limit).
  Status append(const std::string& kind, const std::string& json);

  // For a run resuming from a checkpoint taken after `steps` optimizer steps: removes from the
  // end of the log at `path` the records of steps the checkpoint does not hold (a "steps" or
  // "step" value above `steps`: written after it, by the run that crashed) and a last line torn
  // by the crash, so that the resumed run does not log them twice. Records before them, and
  // other runs' records, stay. A missing file is fine.
  static Status trim_for_resume(const std::string& path, int64_t steps);

  const std::string& path() const { return path_; }

  // The current time as ISO 8601 in UTC with milliseconds: "2024-05-01T12:34:56.789Z".
  static std::string utc_timestamp();

 private:
  RunLog(std::string path, std::FILE* file) : path_(std::move(path)), file_(file, &std::fclose) {}

  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
};

}  // namespace stoker
