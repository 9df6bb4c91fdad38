#pragma once
// LocalShardSource: a dataset directory's shards, every one mapped and checked against the
// manifest at open (present, same schema, same record count and index checksum) and kept mapped
// until the source is destroyed; acquire() is free and its pins hold nothing. Immutable after
// open: thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "stoker/store/shard_source.h"

namespace stoker {

class LocalShardSource : public ShardSource {
 public:
  static Result<std::shared_ptr<LocalShardSource>> open(const std::string& dir);

  const Manifest& manifest() const override { return manifest_; }
  const std::string& location() const override { return dir_; }
  // The directory.
  std::string describe() const override { return dir_; }
  const std::vector<const ShardReader*>& readers() const override { return readers_; }
  bool needs_pins() const override { return false; }
  Result<ShardPin> acquire(int shard, const std::function<bool()>& cancelled) override;
  ShardSourceStats stats() const override { return {}; }

 private:
  LocalShardSource() = default;

  std::string dir_;
  Manifest manifest_;
  std::vector<ShardReader> shards_;
  std::vector<const ShardReader*> readers_;  // into shards_
};

}  // namespace stoker
