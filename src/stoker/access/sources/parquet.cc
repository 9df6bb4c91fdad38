// Parquet files read in place (store/import/parquet_source.h), local or at URLs: their row
// groups read by range through the shard cache.

#include "stoker/access/remote_files.h"
#include "stoker/access/source_opening.h"
#include "stoker/access/source_registry.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/data_files.h"
#include "stoker/store/import/parquet_source.h"

namespace stoker::sources {
namespace {

using namespace remote;  // the access and net layers' names

Result<std::shared_ptr<const Dataset>> open_parquet([[maybe_unused]] const SourceOpening& opening) {
#if STOKER_WITH_PARQUET
  ParquetSourceOptions options;
  options.image_column = opening.params.text("image_column");
  options.label_column = opening.params.text("label_column");
  options.video_column = opening.params.text("video_column");
  const DataAccessOptions& access = *opening.access;
  if (!is_remote_url(opening.location)) {
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ParquetSource> source,
                            ParquetSource::open(opening.location, options));
    return open_in_place(std::move(source), access);
  }
  options.row_groups_ahead = RemoteFiles::kUnitsListed;
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ShardCache> cache, open_cache(access));
  options.footer_cache_dir = cache->dir();
  RemoteFilesOptions fetching;
  fetching.policy = access.cache_policy;
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const RemoteFiles> files,
                          RemoteFiles::open(opening.location, ".parquet", cache, fetching));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ParquetSource> source,
                          ParquetSource::open(files, files->location(), options));
  limit_streams(*files, *source, *cache, opening.shuffle_window);
  return open_in_place(std::move(source), access);
#else
  return unsupported(shown_location(opening.location) +
                     ": this stoker was built without Parquet (STOKER_WITH_PARQUET)");
#endif
}

}  // namespace

SourceSpec parquet() {
  SourceSpec spec;
  spec.name = "parquet";
  spec.doc =
      "Parquet files (a file, a folder, a glob; or URLs), an image (or video) column and a label "
      "column, read in place";
  spec.params = image_table_params();
  spec.params.push_back(ParamSpec::text(
      "video_column", "",
      "a column of videos' bytes read instead of the image (binary, or a struct whose `bytes` "
      "field is binary): records {video, label}, for DecodeClip; \"\": images"));
  spec.auto_rank = 10;
  spec.recognises = [](const std::string& location, const std::function<bool()>&) {
    return is_remote_url(location) ? looks_like_remote_parquet(location)
                                   : is_data_path(location, ".parquet");
  };
  spec.open = open_parquet;
  return spec;
}

}  // namespace stoker::sources
