// WebDataset tars read in place (store/import/webdataset_source.h): a tar, a folder of tars, a
// brace pattern, or several of these one a line; local, or at URLs through the shard cache.

#include <algorithm>

#include "stoker/access/remote_files.h"
#include "stoker/access/source_opening.h"
#include "stoker/access/source_registry.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/webdataset_source.h"
#include "stoker/store/import/webdataset_tars.h"

namespace stoker::sources {
namespace {

using namespace remote;  // the access and net layers' names

Result<std::shared_ptr<const Dataset>> open_webdataset(const SourceOpening& opening) {
  const DataAccessOptions& access = *opening.access;
  WebDatasetSourceOptions options;
  options.label = opening.params.text("label");
  const std::string& fields = opening.params.text("fields");
  for (size_t start = 0; start < fields.size();) {  // names separated by spaces
    const size_t space = std::min(fields.find(' ', start), fields.size());
    if (space > start) options.required.push_back(fields.substr(start, space - start));
    start = space + 1;
  }
  if (!is_remote_url(opening.location)) {
    // The tars' indexes kept in the cache folder.
    if (Result<std::string> dir = cache_dir_of(access); dir.is_ok())
      options.index_cache_dir = dir.value();
    options.samples_per_unit = 1;  // memory holds the samples the loader needs, not tars
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<WebDatasetSource> source,
                            WebDatasetSource::open(opening.location, options));
    return open_in_place(std::move(source), access);
  }
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ShardCache> cache, open_cache(access));
  options.index_cache_dir = cache->dir();
  options.tars_ahead = RemoteFiles::kUnitsListed;
  RemoteFilesOptions fetching;
  fetching.policy = access.cache_policy;
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const RemoteFiles> files,
                          RemoteFiles::open(opening.location, ".tar", cache, fetching));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<WebDatasetSource> source,
                          WebDatasetSource::open(files, files->location(), options));
  limit_streams(*files, *source, *cache, opening.shuffle_window);
  return open_in_place(std::move(source), access);
}

}  // namespace

SourceSpec webdataset() {
  SourceSpec spec;
  spec.params = {
      ParamSpec::text("label", "",
                      "the member read as the label: \"\" the first of cls, label, class and txt "
                      "that some sample holds; \"none\": no label (-1), as image-text pairs"),
      ParamSpec::text("fields", "",
                      "members every sample must hold, separated by spaces: read even where "
                      "some sample lacks one, which is then a bad record (a caption)"),
  };
  spec.name = "webdataset";
  spec.doc =
      "WebDataset tars (a tar, a folder of them, a brace pattern, several a line; or URLs), "
      "read in place, their members fields";
  spec.auto_rank = 20;
  spec.recognises = [](const std::string& location, const std::function<bool()>&) {
    return is_remote_url(location) ? looks_like_remote_webdataset(location)
                                   : looks_like_webdataset(location);
  };
  spec.open = open_webdataset;
  return spec;
}

}  // namespace stoker::sources
