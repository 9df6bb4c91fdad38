#pragma once
// ReadOnDemandSource: the part of a record source (store/shard_source.h) over data read in place
// (an image folder, Parquet files) that every such source shares. A unit (a manifest shard) is
// read when a pin of it is asked for: on the asking thread (others asking for it wait), into
// memory (ShardReader::in_memory) by the subclass's read_unit, which also gives the reasons of
// the unit's bad records (a record the transforms refuse, e.g. an empty image). A unit is let go
// when its last pin is, unless the loader's plan (advise, advance) uses it again within its
// lookahead. Thread-safe.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/shard_source.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

class ReadOnDemandSource : public ShardSource,
                           public std::enable_shared_from_this<ReadOnDemandSource> {
 public:
  const Manifest& manifest() const override { return manifest_; }
  const std::vector<const ShardReader*>& readers() const override { return readers_; }
  bool needs_pins() const override { return true; }
  Result<ShardPin> acquire(int unit, const std::function<bool()>& cancelled) override;
  ShardSourceStats stats() const override;
  void advise(const ShardSchedule& schedule, int64_t lookahead) override;
  void advance(int64_t position) override;

 protected:
  ReadOnDemandSource() = default;
  // Unit u's records, and the reasons of its bad records by global index in `bad`.
  virtual ShardReader read_unit(int u, std::map<uint64_t, std::string>& bad) const = 0;
  // Sets the manifest (once, before any other call): one unit per shard.
  void set_manifest(Manifest manifest);
  // What read_unit said of global record `global`, if it was bad.
  std::optional<std::string> bad_reason(uint64_t global) const;

 private:
  struct Unit {
    int pins = 0;
    bool reading = false;
    std::unique_ptr<ShardReader> reader;
  };
  void release(int u);
  // Whether unpinned unit u is kept: the plan uses it within the lookahead.
  bool wanted(int u) const STOKER_REQUIRES(mutex_);
  // Lets go of the unpinned units the plan no longer wants.
  void sweep() STOKER_REQUIRES(mutex_);

  Manifest manifest_;
  std::vector<const ShardReader*> readers_;  // entry u set while unit u is read

  mutable Mutex mutex_;
  std::condition_variable read_;  // a unit's read ended
  std::vector<Unit> units_ STOKER_GUARDED_BY(mutex_);
  std::vector<int> idle_ STOKER_GUARDED_BY(mutex_);                // units read and not pinned
  std::map<uint64_t, std::string> bad_ STOKER_GUARDED_BY(mutex_);  // global index -> reason
  ShardSchedule schedule_ STOKER_GUARDED_BY(mutex_);
  bool advised_ STOKER_GUARDED_BY(mutex_) = false;
  int64_t lookahead_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t position_ STOKER_GUARDED_BY(mutex_) = 0;
  uint64_t read_bytes_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t wait_ns_ STOKER_GUARDED_BY(mutex_) = 0;
};

}  // namespace stoker
