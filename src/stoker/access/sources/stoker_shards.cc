// A dataset in stoker's format (docs/FORMAT.md): a local directory (store/dataset.h), or at an
// s3:// or http(s):// URL, its manifest fetched (access/remote_manifest.h) and its shards read
// through the machine's shard cache by a RemoteShardSource whose downloads are the object
// store's GETs. What `auto` falls back to: it takes any location.

#include <filesystem>

#include "stoker/access/data_source.h"
#include "stoker/access/remote_manifest.h"
#include "stoker/access/remote_objects.h"
#include "stoker/access/source_opening.h"
#include "stoker/access/source_registry.h"
#include "stoker/cache/remote_shard_source.h"
#include "stoker/net/object_store.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/data_files.h"

namespace stoker::sources {
namespace {

using namespace remote;  // the access and net layers' names

// A local dataset; where there is none, at a headerless token file (nanoGPT's .bin, which no
// source recognises by its bytes), the store's one line says how that file is read.
Result<std::shared_ptr<const Dataset>> open_local(const std::string& path) {
  Result<std::shared_ptr<const Dataset>> opened = Dataset::open(path);
  std::error_code ec;
  if (opened.is_ok() || !std::filesystem::is_regular_file(path, ec) || !is_data_path(path, ".bin"))
    return opened;
  return not_found(opened.status().message() +
                   "; a headerless token file is read where its source is named "
                   "(stoker.Tokens(path, seq_len=..., dtype=...) in Python, --source tokens on "
                   "the command line)");
}

Result<std::shared_ptr<const Dataset>> open_stoker_shards(const SourceOpening& opening) {
  if (!is_remote_url(opening.location)) return open_local(opening.location);
  const DataAccessOptions& access = *opening.access;
  STOKER_ASSIGN_OR_RETURN(RemoteUrl url, parse_remote_url(opening.location));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ObjectStore> store, store_of(url));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ShardCache> cache, open_cache(access));
  const std::string key = url.cache_key();
  STOKER_ASSIGN_OR_RETURN(RemoteManifest fetched,
                          fetch_manifest(*store, url.redacted(), cache->dir() + "/" + key));
  STOKER_RETURN_IF_ERROR(check_cache_floor(fetched.manifest, cache->budget_bytes(), access,
                                           opening.shuffle_window, url.redacted()));
  STOKER_ASSIGN_OR_RETURN(DatasetCache shards,
                          cache->dataset(key, url.redacted(), fetched.manifest));
  RemoteSourceOptions options;
  options.policy = access.cache_policy;
  const CacheFloor floor = cache_floor(fetched.manifest, opening.shuffle_window);
  options.max_streams = streams_that_fit(cache->budget_bytes(), floor.bytes, floor.largest_shard,
                                         options.max_streams);
  return Dataset::open(RemoteShardSource::create(std::move(fetched.manifest), url.redacted(),
                                                 std::move(shards), download_from(store), options));
}

}  // namespace

SourceSpec stoker_shards() {
  SourceSpec spec;
  spec.name = "stoker";
  spec.doc =
      "a dataset in stoker's format (convert, write): a directory, or an s3:// or http(s):// URL "
      "read through the shard cache";
  spec.auto_rank = 100;
  spec.recognises = [](const std::string&, const std::function<bool()>&) { return true; };
  spec.open = open_stoker_shards;
  return spec;
}

}  // namespace stoker::sources
