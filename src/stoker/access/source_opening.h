#pragma once
// What the sources (sources/*.cc, source_registry.h) share: the shard cache their remote data
// goes through, opening a source read in place (with the transcode cache), bounding its
// downloads ahead, the recognitions that data_source's `locate` also makes, and the parameters
// of a table of images.
// Stateless functions; thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/access/remote_files.h"
#include "stoker/access/source_registry.h"
#include "stoker/cache/data_access.h"
#include "stoker/cache/shard_cache.h"
#include "stoker/net/object_store.h"
#include "stoker/store/dataset.h"
#include "stoker/store/import/class_folder_source.h"
#include "stoker/store/unit_read_source.h"
#include "stoker/util/param_spec.h"

namespace stoker::remote {

// The cache at `access`'s folder with its budget (the default counts what the cache holds).
Result<std::shared_ptr<ShardCache>> open_cache(const DataAccessOptions& access);

// The dataset of `source`, read in place: through a transcode cache (transcode_cache.h) in the
// cache folder's transcoded/ when `access` asks for one, its budget --cache-gb's or half the
// free space plus what it holds.
Result<std::shared_ptr<const Dataset>> open_in_place(std::shared_ptr<UnitReadSource> source,
                                                     const DataAccessOptions& access);

// Remote files read in place, `files`, of the source `source` opened on them: at most as many
// downloads ahead at once as the cache's budget holds beside what `shuffle_window` needs at
// once (as a remote dataset's shards).
void limit_streams(const RemoteFiles& files, const ShardSource& source, const ShardCache& cache,
                   int64_t shuffle_window);

// The source of a class folder listed elsewhere: `location` as `listing` lists it, sample i's
// file being `files`' file i, laid out with `options` (ImageFolderSource::open_listed,
// VideoFolderSource::open_listed).
using ListedClassFolder = std::function<Result<std::shared_ptr<ClassFolderSource>>(
    std::string location, ImageFolderListing listing, std::shared_ptr<const InPlaceFiles> files,
    const ClassFolderSourceOptions& options)>;

// What a remote class folder's records are made from in place of its files' bytes (by sample:
// remote_video_opener.h's references), given the folder's redacted URL, its files and the cache
// (what they fetch is kept there).
using ListedRecordBytes = std::function<std::vector<Result<std::string>>(
    const std::string& location, const std::vector<ListedFile>& files,
    std::shared_ptr<ShardCache> cache)>;

// The dataset of the class folder at the URL `opening.location` whose samples are `samples`
// (access/remote_image_folder.h's listing and its errors), read in place: its files through the
// shard cache in groups (kGroupFiles, kGroupBytes), those the loader needs next fetched ahead,
// the source made by `make`; or, with `record_bytes`, its records made from those, no file
// fetched.
Result<std::shared_ptr<const Dataset>> open_remote_class_folder(
    const SourceOpening& opening, const ClassFolderFiles& samples, const ListedClassFolder& make,
    const ListedRecordBytes& record_bytes = nullptr);

// Whether object `name` exists: a HEAD's 404 is no; another failure is the error.
Result<bool> exists(const ObjectStore& store, const std::string& name);

// A local directory with no manifest.json that holds a directory: an image folder, unless it
// holds a dataset (locate_data's business).
bool is_image_folder(const std::string& path);

// Whether the URL `spec` reads as Parquet files: its last line's name, without the query, ends
// in .parquet.
bool looks_like_remote_parquet(const std::string& spec);

// Whether the URL `spec` reads as WebDataset tars: several lines, a brace pattern, or a name
// ending in .tar.
bool looks_like_remote_webdataset(const std::string& spec);

// The parameters of a table of images (Parquet's, Arrow's: store/import/image_table_rows.h): its
// image and label columns.
std::vector<ParamSpec> image_table_params();

}  // namespace stoker::remote
