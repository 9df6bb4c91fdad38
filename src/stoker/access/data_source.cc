#include "stoker/access/data_source.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "stoker/access/remote_objects.h"
#include "stoker/access/source_opening.h"
#include "stoker/net/object_store.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/data_files.h"
#include "stoker/store/import/webdataset_tars.h"
#include "stoker/store/shard_window_bound.h"

namespace stoker::remote {
namespace {

// The text of the dataset `sub` under `url` (its userinfo and query kept, for opening it).
std::string child_url(const RemoteUrl& url, const std::string& sub) {
  RemoteUrl child = url;
  child.path = url.path.empty() ? sub : url.path + "/" + sub;
  std::string text = child.normal();
  if (!url.userinfo.empty()) text.insert(text.find("://") + 3, url.userinfo + "@");
  return text;
}

// `bytes` in GB from 1 GB up, else in MB: "2.3 GB", "16.8 MB".
std::string size_text(uint64_t bytes) {
  return bytes >= 1'000'000'000 ? fmt::format("{:.1f} GB", bytes / 1e9)
                                : fmt::format("{:.1f} MB", bytes / 1e6);
}

// Whether the file `name` is one of Hugging Face's files of `split`: SPLIT-*.parquet.
bool in_split(const std::string& name, const std::string& split) {
  return name.rfind(split + "-", 0) == 0 && name.size() > split.size() + 9 &&
         name.compare(name.size() - 8, 8, ".parquet") == 0;
}

// Hugging Face's splits of a folder's Parquet files (`names`, in the folder): "train" and the
// split evaluated, "test" else "validation", where files of both are there.
struct ParquetSplits {
  std::string train, eval;
};
std::optional<ParquetSplits> parquet_splits(const std::vector<std::string>& names) {
  const auto held = [&](const std::string& split) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& name) { return in_split(name, split); });
  };
  if (!held("train")) return std::nullopt;
  if (held("test")) return ParquetSplits{"train", "test"};
  if (held("validation")) return ParquetSplits{"train", "validation"};
  return std::nullopt;
}

// The folder of datasets `train` and `eval` at `path`.
DataLocation split_location(const std::string& path, std::string train, std::string eval) {
  DataLocation where;
  where.path = path;
  where.folder = true;
  where.datasets = {eval, train};
  std::sort(where.datasets.begin(), where.datasets.end());
  where.train = std::move(train);
  where.eval = std::move(eval);
  return where;
}

// Hugging Face's split files in a folder of Parquet files (parquet_splits): DIR/train-*.parquet
// with DIR/test-*.parquet or DIR/validation-*.parquet, as globs; else the path as one dataset.
DataLocation locate_parquet(const std::string& path) {
  namespace fs = std::filesystem;
  DataLocation where;
  where.path = path;
  where.datasets = {path};
  where.train = path;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return where;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (is_data_path(entry.path().string(), ".parquet"))
      names.push_back(entry.path().filename().string());
  const std::optional<ParquetSplits> splits = parquet_splits(names);
  if (!splits) return where;
  const std::string base = path.back() == '/' ? path : path + "/";
  return split_location(path, base + splits->train + "-*.parquet",
                        base + splits->eval + "-*.parquet");
}

// Hugging Face's split files in the remote folder `folder` (a URL ending in '/', its `store`
// listing it), as locate_parquet's in a local one: each split the URLs of its files, one a
// line, by name; nullopt where the folder has no such splits or cannot be listed.
std::optional<DataLocation> locate_remote_parquet(const std::string& folder, const RemoteUrl& url,
                                                  const ObjectStore& store) {
  Result<std::vector<std::string>> names = store.list("");
  if (!names.is_ok()) return std::nullopt;
  const std::optional<ParquetSplits> splits = parquet_splits(names.value());
  if (!splits) return std::nullopt;
  const auto urls = [&](const std::string& split) {
    std::string spec;
    for (const std::string& name : names.value())
      if (in_split(name, split))
        spec += (spec.empty() ? "" : "\n") + folder + uri_encode_path(name);
    return spec;
  };
  return split_location(url.redacted(), urls(splits->train), urls(splits->eval));
}

// The image folder(s) at `path` (is_image_folder): train/ with val/ or test/, else one.
DataLocation locate_image_folders(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  DataLocation where;
  where.path = path;
  const std::string base = path.back() == '/' ? path : path + "/";
  auto dir = [&](const char* name) { return fs::is_directory(base + name, ec); };
  if (dir("train") && (dir("test") || dir("val"))) {
    where.folder = true;
    where.train = base + "train";
    where.eval = base + (dir("test") ? "test" : "val");
    where.datasets = {where.eval, where.train};
    std::sort(where.datasets.begin(), where.datasets.end());
    return where;
  }
  where.datasets = {path};
  where.train = path;
  return where;
}

// The image folders under the folder URL `folder` (for `auto`, when it holds no dataset): its
// train/ with val/ or test/ sub-folders, else itself where it holds sub-folders; nullopt when it
// holds none or cannot be listed.
std::optional<DataLocation> locate_remote_image_folders(const std::string& folder,
                                                        const RemoteUrl& url,
                                                        const ObjectStore& store) {
  Result<FolderEntries> entries = store.list_entries("");
  if (!entries.is_ok() || entries.value().folders.empty()) return std::nullopt;
  const std::vector<std::string>& sub = entries.value().folders;
  const auto has = [&](const char* name) {
    return std::binary_search(sub.begin(), sub.end(), std::string(name));
  };
  // A sub-folder's URL, ending in '/' (before the query) as a folder's does.
  const auto child = [&](const char* name) {
    std::string text = child_url(url, name);
    const size_t query = text.find('?');
    text.insert(query == std::string::npos ? text.size() : query, "/");
    return text;
  };
  DataLocation where;
  where.path = url.redacted();
  if (has("train") && (has("test") || has("val"))) {
    where.folder = true;
    where.train = child("train");
    where.eval = child(has("test") ? "test" : "val");
    where.datasets = {where.eval, where.train};
    std::sort(where.datasets.begin(), where.datasets.end());
    return where;
  }
  where.datasets = {folder};
  where.train = folder;
  return where;
}

}  // namespace

CacheFloor cache_floor(const Manifest& manifest, int64_t shuffle_window) {
  std::vector<int64_t> records;
  std::vector<uint64_t> largest;
  for (const ShardInfo& shard : manifest.shards) {
    records.push_back(static_cast<int64_t>(shard.records));
    largest.push_back(shard.bytes);
  }
  const size_t shards = records.size();
  CacheFloor floor;
  if (!largest.empty()) floor.largest_shard = *std::max_element(largest.begin(), largest.end());
  if (shuffle_window == 0) {
    floor.shards = shards;
  } else if (shuffle_window == kShardByShard) {
    floor.shards = std::min<size_t>(2, shards);
  } else if (std::any_of(records.begin(), records.end(), [](int64_t r) { return r > 0; })) {
    // (live_shard_bound's precondition; a dataset of no records reads no shard)
    floor.shards = std::min<size_t>(
        static_cast<size_t>(live_shard_bound(shuffle_window, records)) + 1, shards);
  }
  std::partial_sort(largest.begin(), largest.begin() + static_cast<ptrdiff_t>(floor.shards),
                    largest.end(), std::greater<>());
  for (size_t i = 0; i < floor.shards; ++i) floor.bytes += largest[i];
  return floor;
}

Status check_cache_floor(const Manifest& manifest, uint64_t budget_bytes,
                         const DataAccessOptions& access, int64_t shuffle_window,
                         const std::string& where) {
  if (manifest.records == 0) return Status::ok();
  const CacheFloor floor = cache_floor(manifest, shuffle_window);
  if (floor.bytes <= budget_bytes) return Status::ok();
  const std::string budget =
      access.cache_gb > 0 ? option_value(access, "cache-gb", fmt::format("{:g}", access.cache_gb))
                          : fmt::format("the default {} (half the cache disk's free space)",
                                        option_value(access, "cache-gb",
                                                     fmt::format("{:.1f}", budget_bytes / 1e9)));
  const std::string cache_gb = option_name(access, "cache-gb");
  if (shuffle_window == kShardByShard) {
    return invalid_argument(
        fmt::format("{}: {} holds fewer than the {} shards ({}) that reading it needs at once; "
                    "raise {}",
                    where, budget, floor.shards, size_text(floor.bytes), cache_gb));
  }
  // The largest window that fits (the need grows with the window).
  int64_t lo = 0, hi = static_cast<int64_t>(manifest.shards.size());
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (cache_floor(manifest, mid).bytes <= budget_bytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const std::string window = shuffle_window == 0 ? "all" : fmt::format("{}", shuffle_window);
  return invalid_argument(fmt::format(
      "{}: {} holds fewer than the {} shards ({}) that {} needs at once; raise {}{}", where, budget,
      floor.shards, size_text(floor.bytes), option_value(access, "shuffle-window", window),
      cache_gb,
      lo > 0 ? fmt::format(" or lower {} ({} fits)", option_name(access, "shuffle-window"), lo)
             : std::string()));
}

Result<DataLocation> locate(const std::string& path_or_url) {
  if (!is_remote_url(path_or_url) && is_data_path(path_or_url, ".parquet"))
    return locate_parquet(path_or_url);
  if (!is_remote_url(path_or_url)
          ? looks_like_webdataset(path_or_url)
          : looks_like_remote_webdataset(path_or_url) || looks_like_remote_parquet(path_or_url)) {
    DataLocation where;
    where.path = is_remote_url(path_or_url) ? shown_location(path_or_url) : path_or_url;
    where.datasets = {path_or_url};
    where.train = path_or_url;
    return where;
  }
  if (!is_remote_url(path_or_url)) {
    Result<DataLocation> where = locate_data(path_or_url);
    if (where.status().code() == StatusCode::kNotFound && is_image_folder(path_or_url))
      return locate_image_folders(path_or_url);
    return where;
  }
  STOKER_ASSIGN_OR_RETURN(RemoteUrl url, parse_remote_url(path_or_url));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ObjectStore> store, store_of(url));
  DataLocation where;
  where.path = url.redacted();
  STOKER_ASSIGN_OR_RETURN(bool dataset, exists(*store, kManifestName));
  if (dataset) {
    where.datasets = {path_or_url};
    where.train = path_or_url;
    return where;
  }
  for (const char* split : {"test", "train", "val"}) {
    STOKER_ASSIGN_OR_RETURN(bool found, exists(*store, std::string(split) + "/" + kManifestName));
    if (found) where.datasets.push_back(child_url(url, split));
  }
  if (where.datasets.empty() && path_or_url.back() == '/') {
    if (std::optional<DataLocation> splits = locate_remote_parquet(path_or_url, url, *store))
      return *splits;
    if (std::optional<DataLocation> folders = locate_remote_image_folders(path_or_url, url, *store))
      return *folders;
  }
  if (where.datasets.empty()) {
    return not_found(where.path + ": neither a dataset (no " + kManifestName +
                     ") nor a folder of datasets (train/ and test/ or val/)");
  }
  where.folder = true;
  for (const std::string& dataset : where.datasets) {
    const std::string split = dataset.substr(dataset.rfind('/') + 1);
    const std::string name = split.substr(0, split.find('?'));
    if (name == "train") where.train = dataset;
    if (name == "test" || (name == "val" && where.eval.empty())) where.eval = dataset;
  }
  return where;
}

Result<std::shared_ptr<const Dataset>> open_dataset(
    const std::string& path_or_url, const DataAccessOptions& access, int64_t shuffle_window,
    const std::string& source, const SourceParams& params, const std::function<bool()>& cancelled) {
  STOKER_ASSIGN_OR_RETURN(const SourceSpec* spec, source_for(source, path_or_url, cancelled));
  if (cancelled && cancelled()) return Status(StatusCode::kCancelled, "cancelled");
  SourceOpening opening;
  STOKER_ASSIGN_OR_RETURN(opening.params,
                          bind_params("source '" + spec->name + "'", spec->params, params));
  opening.location = path_or_url;
  opening.access = &access;
  opening.shuffle_window = shuffle_window;
  opening.cancelled = cancelled;
  return spec->open(opening);
}

}  // namespace stoker::remote
