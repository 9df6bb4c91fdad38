#pragma once
// DatasetWriter: writes a dataset directory crash-safely (docs/DESIGN.md contract 7). Everything is
// written into a staging directory `DIR.partial-<pid>` beside DIR: shards of about
// `shard_bytes` each, then the manifest, then the staging directory is renamed to DIR. A
// writer destroyed before finish() (an error, an exception, a stop request) removes its
// staging directory; a killed process leaves one that is not a dataset (no manifest, wrong
// name) and is removed by the next writer for the same DIR. Each writer holds the lock of its
// staging directory (DirectoryLock) from create() on: a second writer of the same DIR is
// refused at once (kAlreadyExists) and never takes a live writer's directory for a leftover.
//
// The writer also computes the pixel statistics of image fields that go into the manifest
// (store/channel_statistics.h): of every uint8 [C,H,W] or [H,W] field from the records it is
// given; of a bytes field (encoded images, which it cannot decode) from the decoded pixels the
// caller gives for each record. Not thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/channel_statistics.h"
#include "stoker/store/manifest.h"
#include "stoker/store/schema.h"
#include "stoker/store/shard_writer.h"
#include "stoker/util/directory_lock.h"
#include "stoker/util/status.h"

namespace stoker {

struct DatasetWriterOptions {
  uint64_t shard_bytes = uint64_t{256} << 20;  // roll to a new shard past this size
  std::string source;                          // recorded in the manifest
  std::vector<std::string> class_names;        // recorded in the manifest
  // Recorded in the manifest: the records come in a permutation of the source's order drawn
  // from this seed (Manifest::record_shuffle_seed).
  std::optional<uint64_t> record_shuffle_seed;
  // Polled before each record is appended; true stops the writer (append returns kCancelled)
  // so that its owner destroys it and nothing is left. Optional.
  std::function<bool()> stop_requested;
};

class DatasetWriter {
 public:
  // kAlreadyExists if DIR exists or another writer is writing it. Creates DIR's parent
  // directories if needed.
  static Result<std::unique_ptr<DatasetWriter>> create(const std::string& dir, const Schema& schema,
                                                       DatasetWriterOptions options = {});
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;
  ~DatasetWriter();

  // Appends one encoded record (RecordEncoder). With variable-length fields, checks its layout
  // (check_record_layout: whole rows, fields sharing a dimension with as many rows;
  // kInvalidArgument naming the record otherwise) and counts their rows for the manifest's
  // max_lengths.
  Status append(const uint8_t* record, size_t size);
  // Adds the pixels of the image in bytes field `field` of the record appended last, decoded to
  // RGB by the caller: one call per record, right after its append(). kInvalidArgument if
  // `field` is not a bytes field, `pixels` are not RGB (3 channels), or the last record has its
  // statistics already.
  Status add_decoded_statistics(int field, const ChannelStatistics& pixels);
  // Finishes the last shard, writes the manifest and moves the dataset into place. The manifest
  // holds the statistics of each image field whose records have any pixels, unless a channel of
  // it is constant (a std of 0, which nothing can be normalised by). kInvalidArgument if a bytes
  // field's decoded statistics were given for some records but not all.
  Status finish();

  uint64_t records() const { return manifest_.records; }
  const Schema& schema() const { return manifest_.schema; }

 private:
  DatasetWriter(std::string dir, std::string staging, Manifest manifest,
                DatasetWriterOptions options);
  Status finish_shard();
  // Checks the layout of a record with variable-length fields and adds its rows to max_lengths.
  Status count_rows(const uint8_t* record, size_t size);
  // Puts the statistics computed into the manifest.
  Status finish_statistics();

  std::string dir_;
  std::string staging_;
  std::optional<DirectoryLock> staging_lock_;  // held from create() until the rename
  Manifest manifest_;
  DatasetWriterOptions options_;
  std::optional<ShardWriter> shard_;
  // The statistics of a field that has them, and the records that added to them.
  struct FieldAccumulator {
    int field = 0;
    ChannelStatistics pixels;
    uint64_t records = 0;
  };
  std::vector<FieldAccumulator> statistics_;
  bool finished_ = false;
};

}  // namespace stoker
