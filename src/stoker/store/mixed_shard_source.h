#pragma once
// MixedShardSource: several datasets read as one, their shards one after another (part p's
// records follow the parts before it), for a mixture of sources (pipeline/orders/mixture.cc,
// docs/DESIGN.md contract 13). Every call goes to the part that holds the shard, with its
// shard number; records, errors and files are the part's. The parts share one schema (the
// first's; another is refused naming the field and the part); their class names are kept where
// all are the same, else none. Thread-safety: as its parts'.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stoker/store/dataset.h"
#include "stoker/store/shard_source.h"

namespace stoker {

class MixedShardSource : public ShardSource {
 public:
  // The parts, at least two, each opened (not null).
  static Result<std::shared_ptr<MixedShardSource>> create(
      std::vector<std::shared_ptr<const Dataset>> parts);

  const Manifest& manifest() const override { return manifest_; }
  const std::string& location() const override { return location_; }
  std::string describe() const override;
  const std::vector<const ShardReader*>& readers() const override { return readers_; }
  bool needs_pins() const override { return needs_pins_; }
  bool follows_plan() const override { return follows_plan_; }  // any part's
  Result<ShardPin> acquire(int shard, const std::function<bool()>& cancelled) override;
  Result<ShardPins> acquire_all(const std::vector<int>& shards,
                                const std::function<bool()>& cancelled,
                                const std::function<bool()>& awaited) override;
  ShardSourceStats stats() const override;
  Result<std::vector<FileStamp>> file_stamps() const override;
  Status record_error(int shard, uint64_t record, uint64_t global,
                      const Status& status) const override;
  void advise(const ShardSchedule& schedule, int64_t lookahead) override;
  void advance(int64_t position) override;
  std::vector<int> part_shards() const override;
  std::vector<int64_t> part_tokens() const override;

 private:
  explicit MixedShardSource(std::vector<std::shared_ptr<const Dataset>> parts);
  // The part that holds shard `shard`.
  size_t part_of(int shard) const;
  // Pins of part p's shards `shards` (its numbers, sorted), numbered as this source's; each
  // pinned shard's reader put in readers_.
  Result<ShardPins> pin_part(size_t p, const std::vector<int>& shards,
                             const std::function<bool()>& cancelled,
                             const std::function<bool()>& awaited);

  std::vector<std::shared_ptr<const Dataset>> parts_;
  std::vector<int> first_shard_;  // each part's first shard, then the shard count
  Manifest manifest_;
  std::string location_;
  std::vector<const ShardReader*> readers_;  // a pinned part shard's, set by pin_part
  std::mutex readers_mutex_;                 // pin_part's writes
  bool needs_pins_ = false;
  bool follows_plan_ = false;
};

}  // namespace stoker
