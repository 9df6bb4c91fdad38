#pragma once
// DataAccessOptions: how a command reads a remote dataset (docs/REMOTE-DESIGN.md section 3),
// and how data read in place is read faster (transcode_cache), the same for every command that
// reads one (the CLI binds them in cli/data_access_options.h, Python takes them as keywords): the
// cache folder, its byte budget and its eviction policy. A local dataset ignores them. Values; the
// functions are stateless and thread-safe.

#include <cstdint>
#include <string>

#include "stoker/util/enum_names.h"
#include "stoker/util/environment_lookup.h"
#include "stoker/util/status.h"

namespace stoker {

// Which cached shard gives way to a new one: the one whose next use is farthest (the loader
// knows its future), or the least recently used (only to compare against).
enum class EvictionPolicy { kNextUse, kLru };

inline constexpr auto kEvictionPolicyNames = enum_names<EvictionPolicy>(
    {{EvictionPolicy::kNextUse, "next-use"}, {EvictionPolicy::kLru, "lru"}});

struct DataAccessOptions {
  // --cache-dir; "": default_cache_dir().
  std::string cache_dir;
  // --cache-gb, in GB (10^9 bytes), > 0; 0: half of the cache file system's free space plus what
  // the cache already holds.
  double cache_gb = 0;
  // --cache-policy.
  EvictionPolicy cache_policy = EvictionPolicy::kNextUse;
  // --transcode-cache: data read in place (an image folder, WebDataset tars, Parquet) passes
  // through a transcode cache (store/transcode_cache.h) under the cache folder's transcoded/,
  // its budget cache_gb's. A stoker dataset ignores it.
  bool transcode_cache = false;
  // How messages name these options and --shuffle-window: the command line's flags, or (true)
  // Python's keywords (cache_gb=).
  bool keywords = false;
};

// Option `flag` ("cache-gb", "shuffle-window") as messages to `options`' caller name it:
// "--cache-gb", or with options.keywords "cache_gb=".
std::string option_name(const DataAccessOptions& options, const std::string& flag);
// The option set to `value`: "--cache-gb 2", or "cache_gb=2".
std::string option_value(const DataAccessOptions& options, const std::string& flag,
                         const std::string& value);

// $STOKER_CACHE, else $XDG_CACHE_HOME/stoker/remote, else $HOME/.cache/stoker/remote (unset
// and empty variables alike skipped); kInvalidArgument when none of them is set.
Result<std::string> default_cache_dir(const EnvironmentLookup& env);

// kInvalidArgument, one line naming the option, for a cache_gb that is negative or not finite.
Status check_data_access(const DataAccessOptions& options);

// options.cache_dir, or the process environment's default_cache_dir().
Result<std::string> cache_dir_of(const DataAccessOptions& options);

// The folder where a loader over data read with `options` keeps what it learns of the data for
// later runs (SourceContext::cache_dir: videos' indexes, video/video_cache.h, which clips and
// frame counts read), "" where there is none: cache_dir_of's, the folder the sources keep their
// listings and tars' indexes in. It sets that folder's bound on what they keep there from
// options.cache_gb (util/saved_form.h's set_saved_form_bound). The one rule of every loader: the
// Python Loader's, `stoker train`'s and `doctor`'s, `bench loader`'s.
std::string loader_cache_dir(const DataAccessOptions& options);

// The budget in bytes: cache_gb's, or (cache_gb 0) half of `free_bytes` (the cache file
// system's free space) plus `held_bytes` (what the cache holds now).
uint64_t cache_budget_bytes(const DataAccessOptions& options, uint64_t free_bytes,
                            uint64_t held_bytes);

}  // namespace stoker
