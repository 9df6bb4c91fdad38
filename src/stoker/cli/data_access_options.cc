#include "cli/data_access_options.h"

#include "cli/usage.h"

namespace stoker::cli {

void add_data_access_options(CLI::App& command, DataAccessOptions& access) {
  command
      .add_option("--cache-dir", access.cache_dir,
                  "Where shards of an s3:// or http(s):// dataset are cached, and what is "
                  "learnt of data read in place (listings, tars' and videos' indexes) for later "
                  "runs (default: $STOKER_CACHE, else $XDG_CACHE_HOME/stoker/remote, else "
                  "~/.cache/stoker/remote)")
      ->check(path_value("--cache-dir"));
  command
      .add_option("--cache-gb", access.cache_gb,
                  "The cache's budget in GB (default: half the cache disk's free space plus what "
                  "the cache holds)")
      ->check(real_number("--cache-gb", 0, /*min_inclusive=*/false));
  command
      .add_option_function<std::string>(
          "--cache-policy",
          [&access](const std::string& text) {
            access.cache_policy = *kEvictionPolicyNames.find(text);
          },
          "Which cached shard gives way: next-use (the one needed last; the loader knows its "
          "order) or lru (least recently used: only to compare)")
      ->check(one_of("--cache-policy", kEvictionPolicyNames.names()))
      ->default_str(kEvictionPolicyNames.name(access.cache_policy));
  command.add_flag("--transcode-cache", access.transcode_cache,
                   "Data read in place (an image folder, WebDataset tars, Parquet): transcode "
                   "each unit's JPEGs for crops on its first read, as convert does, and keep them "
                   "under the cache folder (faster crops from then on; the first epoch pays the "
                   "transcode, the disk holds a copy)");
}

}  // namespace stoker::cli
