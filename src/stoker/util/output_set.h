#pragma once
// OutputSet: the outputs one command writes — files (a log, a trace, a saved model) and
// directories with the files it writes into them (a checkpoint directory's LATEST and step-*,
// a report's index.html) — so that no two of them are the same file: one output would replace
// the other's content. Paths are compared as the kernel resolves them (util/resolved_path.h)
// and, for files that exist, by device and inode (a hard link is the same file). Checked
// before any work starts.
//
//   OutputSet outputs;
//   throw_if_error(outputs.add_dir("--checkpoint-dir", "ck", {"LATEST", "step-*"}));
//   throw_if_error(outputs.add_file("--log", "ck/LATEST"));
//   // kInvalidArgument: --log 'ck/LATEST' is a file --checkpoint-dir 'ck' writes: ...
//
// Not thread-safe.

#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

class OutputSet {
 public:
  // The file `path` of option `flag` (nothing if empty). kInvalidArgument naming both options
  // if an output added before writes the same file (or is a directory at that path).
  Status add_file(const std::string& flag, const std::string& path);
  // The directory `path` of option `flag` (nothing if empty), into which the command writes the
  // files named by `writes`: names, or prefixes ending in '*'. kInvalidArgument naming both
  // options if a file added before is one of them, or another directory output at the same
  // path writes a name of them.
  Status add_dir(const std::string& flag, const std::string& path, std::vector<std::string> writes);

 private:
  struct Output {
    std::string flag;
    std::string given;     // the path as given
    std::string resolved;  // resolved_path()
    bool dir;
    std::vector<std::string> writes;  // a directory's
  };
  Status add(Output output);
  // Why `a` and `b` write the same file; empty if they do not.
  static std::string clash(const Output& a, const Output& b);

  std::vector<Output> outputs_;
};

}  // namespace stoker
