#pragma once
// Where a command's data comes from, local or remote, the one way every command opens a
// dataset (docs/REMOTE-DESIGN.md section 1): a local path exactly as before
// (store/data_location.h, Dataset::open), a local image folder read in place
// (store/import/image_folder_source.h), WebDataset tars or Parquet files read in place
// (store/import/webdataset_source.h, parquet_source.h), local or at URLs (access/remote_files.h:
// copied whole into the shard cache), or a dataset at an s3:// or http(s):// URL, read
// through the machine's shard cache (cache/shard_cache.h) by a RemoteShardSource whose
// downloads are the object store's GETs. Credentials come from the environment
// (net/aws_credentials.h); no message holds them. Stateless functions; thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "stoker/cache/data_access.h"
#include "stoker/store/data_location.h"
#include "stoker/store/dataset.h"
#include "stoker/store/import/parquet_files.h"
#include "stoker/store/import/parquet_source.h"

namespace stoker::remote {

// The shuffle window of a reader that goes through the dataset shard by shard (inspect,
// verify, an evaluation in order): the cache must hold two shards at once.
inline constexpr int64_t kShardByShard = -1;

// What kind of data a path names (Python's `source=`): kAuto finds out (a dataset directory, a
// folder of them, WebDataset tars (looks_like_webdataset), Parquet files (is_parquet_path), else
// an image folder), the others say. kWebDataset's path is webdataset_tars.h's: a tar, a folder of
// tars, a brace pattern, or several of these one a line.
enum class SourceKind { kAuto, kStoker, kImageFolder, kWebDataset, kParquet };
// "auto", "stoker", "imagefolder", "webdataset", "parquet"; kInvalidArgument naming the others.
Result<SourceKind> parse_source_kind(const std::string& name);

// locate_data for a local path, where WebDataset tars (looks_like_webdataset) are one dataset,
// Parquet files one, or two where a folder's files are Hugging Face's splits (train-*.parquet
// with test-* or validation-*: the globs of each), and a directory that is neither a dataset nor
// a folder of them but holds a directory is an image folder, or with train/ and val/ (or test/)
// two; for a URL:
// URL/manifest.json, else the datasets train/, test/ and val/ under it, probed by HEAD (their
// DataLocation entries are URLs; `path` is the redacted one), else for a folder URL (ending in
// '/') Hugging Face's split files in its listing as for a local folder (each split its files'
// URLs, one a line). kNotFound naming the URL when it holds none of these; the probes' errors (a
// 403 naming the URL and where the keys came from).
Result<DataLocation> locate(const std::string& path_or_url);

// The dataset at `path_or_url`: Dataset::open(dir) for a local path; for a URL, its manifest
// (access/remote_manifest.h), then shards through the cache that `access` describes, checked
// first against the budget floor (check_cache_floor for `shuffle_window`: a loader's window,
// kShuffleAll 0 for the whole dataset, or kShardByShard).
// A local image folder (kImageFolder, or kAuto for a directory without a manifest.json holding
// a directory) is read in place, its listing cached in the cache folder `access` names; so are
// WebDataset tars (kWebDataset, or kAuto as above or for URLs a name ending in .tar, a brace
// pattern or several lines), their indexes cached there, and Parquet files (kParquet, or kAuto
// where is_parquet_path or a URL's name ends in .parquet), their columns `parquet`'s; remote
// ones through the cache. `cancelled` (may be empty) turning true ends a remote image folder's
// listing (kCancelled): Python's Ctrl-C.
Result<std::shared_ptr<const Dataset>> open_dataset(
    const std::string& path_or_url, const DataAccessOptions& access, int64_t shuffle_window,
    SourceKind kind = SourceKind::kAuto, const ParquetSourceOptions& parquet = {},
    const std::function<bool()>& cancelled = nullptr);

// What a cache must hold for `shuffle_window` to read `manifest`: the M largest shards, M =
// live_shard_bound plus one in flight (all of them for window 0, two for kShardByShard); and
// the largest shard, which a download needs room for.
struct CacheFloor {
  size_t shards = 0;
  uint64_t bytes = 0;
  uint64_t largest_shard = 0;
};
CacheFloor cache_floor(const Manifest& manifest, int64_t shuffle_window);

// kInvalidArgument, one line naming `where`, when `budget_bytes` cannot hold the cache floor
// of `shuffle_window`, e.g. "URL: --cache-gb 2 holds fewer than the 9 shards (2.3 GB) that
// --shuffle-window 8 needs at once; raise --cache-gb or lower --shuffle-window". `access`
// says how the budget was set (--cache-gb or its default).
Status check_cache_floor(const Manifest& manifest, uint64_t budget_bytes,
                         const DataAccessOptions& access, int64_t shuffle_window,
                         const std::string& where);

}  // namespace stoker::remote
