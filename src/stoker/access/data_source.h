#pragma once
// Where a command's data comes from, local or remote, the one way every command opens a
// dataset (docs/REMOTE-DESIGN.md section 1): where a path or URL's datasets are (locate: its
// train and eval splits), and opening one by its source (source_registry.h: stoker's shards,
// an image folder, WebDataset tars, Parquet files; local, or at URLs through the machine's shard
// cache). Credentials come from the environment (net/aws_credentials.h); no message holds them.
// Stateless functions; thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "stoker/access/source_registry.h"
#include "stoker/cache/data_access.h"
#include "stoker/store/data_location.h"
#include "stoker/store/dataset.h"

namespace stoker::remote {

// The shuffle window of a reader that goes through the dataset shard by shard (inspect,
// verify, an evaluation in order): the cache must hold two shards at once.
inline constexpr int64_t kShardByShard = -1;

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

// The dataset at `path_or_url`, opened by the source `source` names (source_registry.h: "auto"
// the first that recognises it, stoker's format last), with `params`, its own parameters.
// Remote data goes through the cache that `access` describes, checked first against the floor
// that `shuffle_window` needs (check_cache_floor: a loader's window, kShuffleAll 0 for the whole
// dataset, or kShardByShard). kInvalidArgument for an unknown source or parameter.
// `cancelled` (may be empty) turning true ends a remote image folder's listing (kCancelled):
// Python's Ctrl-C.
Result<std::shared_ptr<const Dataset>> open_dataset(
    const std::string& path_or_url, const DataAccessOptions& access, int64_t shuffle_window,
    const std::string& source = "auto", const SourceParams& params = {},
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
