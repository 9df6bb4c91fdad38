#include "stoker/store/dataset.h"

#include <fmt/format.h>

#include <algorithm>

#include "stoker/store/local_shard_source.h"

namespace stoker {

Result<std::shared_ptr<const Dataset>> Dataset::open(const std::string& dir) {
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<LocalShardSource> source, LocalShardSource::open(dir));
  return open(std::move(source));
}

Result<std::shared_ptr<const Dataset>> Dataset::open(std::shared_ptr<ShardSource> source) {
  if (!source) return invalid_argument("Dataset::open: no shard source");
  std::shared_ptr<Dataset> dataset(new Dataset());
  const Manifest& manifest = source->manifest();
  if (source->readers().size() != manifest.shards.size()) {
    return Status(
        StatusCode::kInternal,
        fmt::format("{}: the shard source has {} readers for {} shards", source->location(),
                    source->readers().size(), manifest.shards.size()));
  }
  std::vector<uint64_t> starts{0};
  for (const ShardInfo& info : manifest.shards) starts.push_back(starts.back() + info.records);
  dataset->shards_ = RangeOf<uint64_t>(std::move(starts));
  dataset->manifest_ = &manifest;
  dataset->readers_ = source->readers().data();
  dataset->needs_pins_ = source->needs_pins();
  dataset->follows_plan_ = source->follows_plan();
  dataset->source_ = std::move(source);
  return std::shared_ptr<const Dataset>(std::move(dataset));
}

Result<ShardPins> Dataset::pin_shards(const int64_t* indices, size_t n,
                                      const std::function<bool()>& cancelled,
                                      const std::function<bool()>& awaited) const {
  std::vector<int> shards(n);
  for (size_t k = 0; k < n; ++k) shards[k] = locate(static_cast<uint64_t>(indices[k])).shard;
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  return source_->acquire_all(shards, cancelled, awaited);
}

Status Dataset::for_each_record(const std::function<Status(uint64_t i)>& visit) const {
  for (int s = 0; s < num_shards(); ++s) {
    if (shard_starts()[s] == shard_starts()[s + 1]) continue;
    ShardPins pins;  // waiting for room as a piece does (other users of a shared cache)
    if (needs_pins_) {
      const int64_t first = static_cast<int64_t>(shard_starts()[s]);
      STOKER_ASSIGN_OR_RETURN(pins, pin_shards(&first, 1, nullptr, nullptr));
    }
    for (uint64_t i = shard_starts()[s]; i < shard_starts()[s + 1]; ++i)
      STOKER_RETURN_IF_ERROR(visit(i));
  }
  return Status::ok();
}

Status Dataset::record_error(uint64_t i, const Status& status) const {
  Location at = locate(i);
  return source_->record_error(at.shard, at.record, i, status);
}

Status Dataset::verify_record(uint64_t i) const {
  Location at = locate(i);
  if (readers_[at.shard]->verify_record(at.record).is_ok()) return Status::ok();
  return record_error(i, corrupt("checksum mismatch"));
}

Status Dataset::found_bad(uint64_t i) const {
  const Location at = locate(i);
  if (!readers_[at.shard]->bad(at.record)) return Status::ok();
  return record_error(i, corrupt("found bad when read"));
}

}  // namespace stoker
