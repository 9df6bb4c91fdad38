#include "stoker/access/source_opening.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "stoker/access/data_source.h"
#include "stoker/access/remote_image_folder.h"
#include "stoker/store/data_location.h"
#include "stoker/store/import/transcode_cache.h"

namespace stoker::remote {

Result<std::shared_ptr<ShardCache>> open_cache(const DataAccessOptions& access) {
  STOKER_RETURN_IF_ERROR(check_data_access(access));
  STOKER_ASSIGN_OR_RETURN(std::string dir, cache_dir_of(access));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ShardCache> cache, ShardCache::open(dir, 0));
  const uint64_t held = access.cache_gb > 0 ? 0 : cache->usage().bytes;
  return ShardCache::open(dir, cache_budget_bytes(access, free_disk_bytes(dir), held),
                          fmt::format("raise {} or lower {}", option_name(access, "cache-gb"),
                                      option_name(access, "shuffle-window")));
}

Result<std::shared_ptr<const Dataset>> open_in_place(std::shared_ptr<UnitReadSource> source,
                                                     const DataAccessOptions& access) {
  if (access.transcode_cache) {
    STOKER_ASSIGN_OR_RETURN(const std::string dir, cache_dir_of(access));
    const std::string transcoded = dir + "/transcoded";
    // Opened twice: the budget of a cache_gb of 0 counts what the cache holds.
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<TranscodeCache> held,
                            TranscodeCache::open(transcoded, 0));
    STOKER_ASSIGN_OR_RETURN(
        std::shared_ptr<TranscodeCache> cache,
        TranscodeCache::open(transcoded, cache_budget_bytes(access, free_disk_bytes(transcoded),
                                                            held->held_bytes())));
    source->set_unit_pass([cache](ShardReader unit, std::string& note) {
      return cache->transcoded(std::move(unit), &note);
    });
  }
  return Dataset::open(std::move(source));
}

void limit_streams(const RemoteFiles& files, const ShardSource& source, const ShardCache& cache,
                   int64_t shuffle_window) {
  const CacheFloor floor = cache_floor(source.manifest(), shuffle_window);
  files.limit_streams(streams_that_fit(cache.budget_bytes(), floor.bytes, floor.largest_shard,
                                       PrefetchInputs().max_streams));
}

Result<std::shared_ptr<const Dataset>> open_remote_class_folder(
    const SourceOpening& opening, const ClassFolderFiles& samples, const ListedClassFolder& make,
    const ListedRecordBytes& record_bytes) {
  const DataAccessOptions& access = *opening.access;
  STOKER_ASSIGN_OR_RETURN(
      RemoteImageFolder folder,
      list_remote_image_folder(opening.location, opening.cancelled, ListingLimits(), samples));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ShardCache> cache, open_cache(access));
  ClassFolderSourceOptions options;
  if (record_bytes) {
    auto bytes = std::make_shared<const std::vector<Result<std::string>>>(
        record_bytes(folder.location, folder.files, cache));
    options.record_bytes = [bytes](uint64_t i) { return (*bytes)[i]; };
  }
  RemoteFilesOptions fetching;
  fetching.policy = access.cache_policy;
  fetching.group_files = kGroupFiles;
  fetching.group_bytes = kGroupBytes;
  STOKER_ASSIGN_OR_RETURN(
      std::shared_ptr<const RemoteFiles> files,
      RemoteFiles::open_listed(std::move(folder.files), folder.location, cache, fetching));
  // Files listed ahead: enough for the deepest horizon of groups.
  options.units_ahead = RemoteFiles::kUnitsListed * kGroupFiles;
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ClassFolderSource> source,
                          make(folder.location, std::move(folder.listing), files, options));
  limit_streams(*files, *source, *cache, opening.shuffle_window);
  return open_in_place(std::move(source), access);
}

Result<bool> exists(const ObjectStore& store, const std::string& name) {
  Result<HttpResponse> head = store.head(name);
  if (head.is_ok()) return true;
  if (head.status().code() == StatusCode::kNotFound) return false;
  return head.status();
}

bool is_image_folder(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec) ||
      fs::exists(fs::symlink_status(fs::path(path) / kManifestName, ec)))
    return false;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (fs::exists(fs::symlink_status(entry.path() / kManifestName, ec))) return false;
  }
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (entry.is_directory(ec)) return true;
  return false;
}

bool looks_like_remote_parquet(const std::string& spec) {
  const std::string last = spec.substr(spec.rfind('\n') + 1);
  const std::string path = last.substr(0, last.find('?'));
  return path.size() > 8 && path.compare(path.size() - 8, 8, ".parquet") == 0;
}

bool looks_like_remote_webdataset(const std::string& spec) {
  const std::string path = spec.substr(0, spec.find('?'));
  return spec.find('\n') != std::string::npos || spec.find('{') != std::string::npos ||
         (path.size() > 4 && path.compare(path.size() - 4, 4, ".tar") == 0);
}

std::vector<ParamSpec> image_table_params() {
  return {
      ParamSpec::text("image_column", "image",
                      "the image: a binary column, or a struct whose `bytes` field is binary "
                      "(Hugging Face's Image)"),
      ParamSpec::text("label_column", "label", "the class: an integer column"),
  };
}

}  // namespace stoker::remote
