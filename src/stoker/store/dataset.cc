#include "stoker/store/dataset.h"

#include <fmt/format.h>

#include "stoker/store/shard_check.h"

namespace stoker {

Result<std::shared_ptr<const Dataset>> Dataset::open(const std::string& dir) {
  STOKER_ASSIGN_OR_RETURN(Manifest manifest, Manifest::load(dir));
  std::shared_ptr<Dataset> dataset(new Dataset());
  dataset->dir_ = dir;
  uint64_t start = 0;
  for (const ShardInfo& info : manifest.shards) {
    const std::string path = dir + "/" + info.file;
    Result<ShardReader> reader = ShardReader::open(path);
    if (!reader.is_ok()) {
      if (reader.status().code() == StatusCode::kNotFound)
        return not_found(path + ": shard named in the manifest is missing");
      return reader.status();
    }
    STOKER_RETURN_IF_ERROR(check_shard_matches(reader.value(), info, manifest.schema));
    dataset->shard_starts_.push_back(start);
    start += info.records;
    dataset->shards_.push_back(std::move(reader).value());
  }
  dataset->shard_starts_.push_back(start);
  dataset->manifest_ = std::move(manifest);
  return std::shared_ptr<const Dataset>(std::move(dataset));
}

Status Dataset::record_error(uint64_t i, const Status& status) const {
  Location at = locate(i);
  return Status(status.code(),
                fmt::format("{}: record {}: {} (dataset record {})", shards_[at.shard].path(),
                            at.record, status.message(), i));
}

Status Dataset::verify_record(uint64_t i) const {
  Location at = locate(i);
  if (shards_[at.shard].verify_record(at.record).is_ok()) return Status::ok();
  return record_error(i, corrupt("checksum mismatch"));
}

}  // namespace stoker
