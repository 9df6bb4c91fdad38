#pragma once
// SplitWriter: the datasets one import writes (OUT/train and OUT/test, or a single OUT), made
// complete together. Each split is a DatasetWriter staging its dataset beside its directory;
// finish() moves them into place only once every split has been written, one after the other,
// then writes the import's own files into OUT (such as a list of skipped inputs), and if any of
// this fails removes what it already put in place. An import that fails before
// finish(), or a SplitWriter destroyed without it, leaves nothing: each writer removes its
// staging directory, and the parent directory `out` is removed too if create() made it and it
// is empty. Only a crash between two splits' final renames can leave one split without the
// other. Not thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "stoker/store/dataset_writer.h"

namespace stoker {

class SplitWriter {
 public:
  // `dirs` are the datasets to create (none may exist: kAlreadyExists), each inside `out` or
  // `out` itself; `out` is created if missing. Every split gets `schema` and `options`, with
  // source `sources[i]`.
  static Result<std::unique_ptr<SplitWriter>> create(const std::string& out,
                                                     const std::vector<std::string>& dirs,
                                                     const std::vector<std::string>& sources,
                                                     const Schema& schema,
                                                     DatasetWriterOptions options);
  SplitWriter(const SplitWriter&) = delete;
  SplitWriter& operator=(const SplitWriter&) = delete;
  ~SplitWriter();

  // The writer of split `i` (in the order of `dirs`).
  DatasetWriter& split(size_t i) { return *writers_[i]; }
  // A file finish() writes into `out` (crash-safely) once the splits are in place.
  struct OutputFile {
    std::string name;
    std::string contents;
  };
  // Finishes every split, then writes `files`; on failure nothing stays in place.
  Status finish(const std::vector<OutputFile>& files = {});

 private:
  SplitWriter(std::string out, bool made_out) : out_(std::move(out)), made_out_(made_out) {}

  std::string out_;
  bool made_out_ = false;  // `out` did not exist before create()
  bool finished_ = false;
  std::vector<std::string> dirs_;
  std::vector<std::unique_ptr<DatasetWriter>> writers_;
};

}  // namespace stoker
