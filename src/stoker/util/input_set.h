#pragma once
// InputSet: what a run reads — dataset folders, a model file, the checkpoint it resumes — so that
// no output of the run can overwrite or land inside one of them. Identity is the file system's
// (device and inode): a path that reaches an input through a symbolic link, `..`, a hard link or
// another mount is the input. Checked before any work starts, so a mistyped output flag costs
// nothing.
//
//   InputSet inputs;
//   inputs.add_datasets("/data/fmnist", "the training data");
//   inputs.add_file("model.pt", "the model");
//   throw_if_error(inputs.check_output("--trace", "/data/fmnist/train/manifest.json"));
//   // kInvalidArgument: --trace '/data/fmnist/train/manifest.json' is inside the training data
//   // '/data/fmnist': outputs never go into an input; give another path
//
// Not thread-safe.

#include <sys/types.h>

#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

class InputSet {
 public:
  // The directory `path` and everything under it are read by the run; `what` names it in
  // errors. A path that does not exist is ignored (its reader reports it).
  void add_tree(const std::string& path, const std::string& what);
  // add_tree, and each regular file directly inside `path` or inside its subdirectories (a
  // dataset's or a folder of datasets' manifests and shards: a few files), so that a hard link
  // to one of them elsewhere is recognised too.
  void add_datasets(const std::string& path, const std::string& what);
  // The file `path` is read by the run. A path that does not exist is ignored.
  void add_file(const std::string& path, const std::string& what);

  // Ok if writing `path` (a file or a directory, named by option `flag` in the error) cannot
  // change an input: it is none of the inputs and no directory above it is an input tree
  // (symbolic links and `..` resolved). kInvalidArgument naming both paths otherwise.
  Status check_output(const std::string& flag, const std::string& path) const;

 private:
  struct Input {
    dev_t device;
    ino_t inode;
    std::string path;
    std::string what;
    bool tree;
  };
  void add(const std::string& path, const std::string& what, bool tree);
  const Input* find(dev_t device, ino_t inode) const;

  std::vector<Input> inputs_;
};

}  // namespace stoker
