#pragma once
// The keywords cache_dir=, cache_gb=, cache_policy= of stoker.Loader and the tools, as
// DataAccessOptions (cache/data_access.h): the package checks their types, this their values.
// Stateless; call with the GIL held or not.

#include <string>

#include "stoker/cache/data_access.h"
#include "stoker/util/status.h"

namespace stoker::python {

// `cache_dir` "" and `cache_gb` 0 take the defaults; an unknown policy or a cache_gb that is
// not above 0 is kInvalidArgument naming the keyword.
inline DataAccessOptions data_access_arguments(const std::string& cache_dir, double cache_gb,
                                               const std::string& cache_policy,
                                               bool transcode_cache = false) {
  DataAccessOptions access;
  access.transcode_cache = transcode_cache;
  access.cache_dir = cache_dir;
  access.cache_gb = cache_gb;
  access.keywords = true;
  const std::optional<EvictionPolicy> policy = kEvictionPolicyNames.find(cache_policy);
  if (!policy)
    throw Error(invalid_argument("cache_policy '" + cache_policy + "' is not one of " +
                                 kEvictionPolicyNames.joined()));
  access.cache_policy = *policy;
  throw_if_error(check_data_access(access));
  return access;
}

}  // namespace stoker::python
