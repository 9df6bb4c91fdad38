#include "stoker/store/local_shard_source.h"

#include "stoker/store/shard_check.h"

namespace stoker {

Result<std::shared_ptr<LocalShardSource>> LocalShardSource::open(const std::string& dir) {
  STOKER_ASSIGN_OR_RETURN(Manifest manifest, Manifest::load(dir));
  std::shared_ptr<LocalShardSource> source(new LocalShardSource());
  source->dir_ = dir;
  source->shards_.reserve(manifest.shards.size());
  for (const ShardInfo& info : manifest.shards) {
    const std::string path = dir + "/" + info.file;
    Result<ShardReader> reader = ShardReader::open(path);
    if (!reader.is_ok()) {
      if (reader.status().code() == StatusCode::kNotFound)
        return not_found(path + ": shard named in the manifest is missing");
      return reader.status();
    }
    STOKER_RETURN_IF_ERROR(check_shard_matches(reader.value(), info, manifest.schema));
    source->shards_.push_back(std::move(reader).value());
  }
  for (const ShardReader& r : source->shards_) source->readers_.push_back(&r);
  source->manifest_ = std::move(manifest);
  return source;
}

Result<ShardPin> LocalShardSource::acquire(int shard, const std::function<bool()>&) {
  return ShardPin(shard, nullptr);
}

}  // namespace stoker
