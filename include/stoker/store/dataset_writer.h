#pragma once
// DatasetWriter: writes a dataset directory crash-safely (DESIGN.md contract 7). Everything is
// written into a staging directory `DIR.partial-<pid>` beside DIR: shards of about
// `shard_bytes` each, then the manifest, then the staging directory is renamed to DIR. A
// writer destroyed before finish() (an error, an exception) removes its staging directory; a
// killed process leaves one that is not a dataset (no manifest, wrong name) and is removed by
// the next writer for the same DIR. Not thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/manifest.h"
#include "stoker/store/schema.h"
#include "stoker/store/shard_writer.h"
#include "stoker/util/status.h"

namespace stoker {

struct DatasetWriterOptions {
  uint64_t shard_bytes = uint64_t{256} << 20;  // roll to a new shard past this size
  std::string source;                          // recorded in the manifest
  std::vector<std::string> class_names;        // recorded in the manifest
};

class DatasetWriter {
 public:
  // kAlreadyExists if DIR exists. Creates DIR's parent directories if needed.
  static Result<std::unique_ptr<DatasetWriter>> create(const std::string& dir, const Schema& schema,
                                                       DatasetWriterOptions options = {});
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;
  ~DatasetWriter();

  // Appends one encoded record (RecordEncoder).
  Status append(const uint8_t* record, size_t size);
  // Finishes the last shard, writes the manifest and moves the dataset into place.
  Status finish();

  uint64_t records() const { return manifest_.records; }
  const Schema& schema() const { return manifest_.schema; }

 private:
  DatasetWriter(std::string dir, std::string staging, Manifest manifest,
                DatasetWriterOptions options);
  Status finish_shard();

  std::string dir_;
  std::string staging_;
  Manifest manifest_;
  DatasetWriterOptions options_;
  std::optional<ShardWriter> shard_;
  bool finished_ = false;
};

}  // namespace stoker
