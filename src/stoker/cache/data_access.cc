#include "stoker/cache/data_access.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "stoker/net/aws_credentials.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

// A variable that is set and not empty.
std::optional<std::string> set(const EnvironmentLookup& env, const char* name) {
  std::optional<std::string> value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

}  // namespace

Result<std::string> default_cache_dir(const EnvironmentLookup& env) {
  if (auto dir = set(env, "STOKER_CACHE")) return *dir;
  if (auto dir = set(env, "XDG_CACHE_HOME")) return *dir + "/stoker/remote";
  if (auto dir = set(env, "HOME")) return *dir + "/.cache/stoker/remote";
  return invalid_argument(
      "no cache folder for remote data: set STOKER_CACHE (or XDG_CACHE_HOME or HOME), or give "
      "--cache-dir");
}

std::string option_name(const DataAccessOptions& options, const std::string& flag) {
  if (!options.keywords) return "--" + flag;
  std::string keyword = flag;
  std::replace(keyword.begin(), keyword.end(), '-', '_');
  return keyword + "=";
}

std::string option_value(const DataAccessOptions& options, const std::string& flag,
                         const std::string& value) {
  return option_name(options, flag) + (options.keywords ? "" : " ") + value;
}

Status check_data_access(const DataAccessOptions& options) {
  if (!std::isfinite(options.cache_gb) || options.cache_gb < 0)
    return invalid_argument(option_name(options, "cache-gb") + " must be a number of GB above 0");
  return Status::ok();
}

Result<std::string> cache_dir_of(const DataAccessOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  return default_cache_dir(remote::process_environment());
}

std::string loader_cache_dir(const DataAccessOptions& options) {
  Result<std::string> dir = cache_dir_of(options);
  std::string folder = dir.is_ok() ? std::move(dir).value() : std::string();
  if (!folder.empty())
    set_saved_form_bound(
        folder, static_cast<uint64_t>(std::llround(std::max(options.cache_gb, 0.0) * 1e9)));
  return folder;
}

uint64_t cache_budget_bytes(const DataAccessOptions& options, uint64_t free_bytes,
                            uint64_t held_bytes) {
  if (options.cache_gb > 0) return static_cast<uint64_t>(std::llround(options.cache_gb * 1e9));
  return free_bytes / 2 + held_bytes;
}

}  // namespace stoker
