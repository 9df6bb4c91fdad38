#pragma once
// RemoteFiles: files read in place (store/in_place_files.h: WebDataset tars, Parquet files) at
// http(s):// or s3:// URLs, read through the machine's shard cache (cache/shard_cache.h,
// ShardCache::objects): a file is downloaded whole into the cache when it is first opened
// (under the cache's budget, shared between processes: one download per file per machine;
// retries and redaction by net/), and read there while pinned. Its identity is its size and
// ETag, so what a cache keeps about it (a tar's index, keyed by its URL) is made again for a file
// changed on the server; a download asks for the ETag listed (If-Match), so a file changed
// during a run is an error naming its URL, never a mix of two versions.
//
// The spec: a URL, a brace pattern of URLs (`https://host/data-{000..099}.tar`, as
// webdataset_tars.h expands it), several of these one a line, or a folder ending in '/': an
// s3:// folder's objects with the suffix, or an http(s):// folder's files with it that its index
// page links to (a web server's autoindex: HttpStore::list, parse_http_index_page), by name.
// Every file is asked for its size and ETag (HEAD) when
// the spec is opened; files already listed with them (open_listed: an image folder's) are not.
// fetch_ahead downloads the files a reader needs next, in its order, one at a time per download
// thread; the destructor cancels and joins them. How many of the files listed it fetches, and on
// how many downloads at once, is the horizon (ahead_horizon): tuned by default as remote shards' is
// (cache/prefetch_depth.h), from one download's measured bandwidth and the reader's pace (the files
// it opened per second while planned), or fixed (RemoteFilesOptions::units_ahead). A full cache
// gives up files by the policy: next-use (the reader's plan, InPlaceFiles::plan: the file read
// farthest ahead, never one read sooner than the incoming one), or least recently used; a download
// ahead that finds no room waits for the reader's next move. Pieces read by range (declare_pieces:
// a Parquet row group's column chunks) are units of the cache of their own, named by the file's
// URL, ETag and size and the ranges, fetched by ranged GETs with If-Match when first read or ahead
// of the reader (fetch_pieces_ahead, on threads of their own and with a horizon of their own, as
// files); read_ranges (a footer) GETs its ranges at once. Thread-safe.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stoker/cache/prefetch_depth.h"
#include "stoker/cache/shard_cache.h"
#include "stoker/net/object_store.h"
#include "stoker/store/in_place_files.h"
#include "stoker/util/thread_annotations.h"

namespace stoker::remote {

struct RemoteFilesOptions {
  EvictionPolicy policy = EvictionPolicy::kNextUse;
  // Units (files, or declared pieces) fetched ahead of the reader: N fixed, on kAheadDownloads
  // threads; 0 tuned from the measured bandwidth and pace (ahead_horizon).
  int units_ahead = 0;
  // The most downloads at once, tuned (open_dataset: streams_that_fit the cache's budget).
  int max_streams = PrefetchInputs().max_streams;
  // Consecutive files kept in the cache as one object, a group (of at most group_files files
  // and group_bytes bytes, and at least one file), downloaded file by file, group_streams GETs
  // at once: small files (an image folder's), which the cache would admit one by one at a cost
  // each, and whose GETs are mostly round trips. 1: each file its own object.
  int group_files = 1;
  uint64_t group_bytes = 0;
  int group_streams = 8;
};

// How many of the units a reader needs next are fetched ahead, and on how many downloads at
// once.
struct AheadHorizon {
  int units = 0;
  int streams = 0;
};

// The horizon for `options`: fixed, or tuned from `measured` (units of one record each, the pace
// in units per second): download_streams' streams, and prefetch_depth's units but at least one
// per stream and at least the unmeasured depth (4, the fixed horizon it replaced). The shards'
// depth counts past the loader's lookahead; this one from the first unit not in memory, so the
// floor stands for the lookahead's units (counting past them made next-use download more over
// the floor with a cache of half the units: remote_parquet_test).
AheadHorizon ahead_horizon(const RemoteFilesOptions& options, const PrefetchInputs& measured);

// A remote file as a listing names it (access/remote_image_folder.h): its store (of a folder
// above it), its name there, its URL and size, and its ETag; where the listing gives no ETag,
// `version` (e.g. a modification time) tells its versions apart and it is downloaded without
// If-Match (only its size is then checked). A file its listing could not size (its HEAD failed
// or gave no size) keeps why in `unreadable`: reading it fails with that, naming its URL.
struct ListedFile {
  std::shared_ptr<const ObjectStore> store;
  std::string name;
  RemoteUrl url;
  uint64_t size = 0;
  std::string etag;
  std::string version;
  Status unreadable;
};

class RemoteFiles : public InPlaceFiles {
 public:
  // The files `spec` names, each a name ending in `suffix` (".tar"), copied into `cache`.
  // kNotFound naming a file's redacted URL that the server does not have, or a folder without
  // such files (an http(s):// page that is no index links to none); kInvalidArgument for a bad
  // URL or pattern, or a name without the suffix; a listing's own errors (kCorrupt for an index
  // page over 8 MiB or cut short).
  static Result<std::shared_ptr<const RemoteFiles>> open(const std::string& spec,
                                                         const std::string& suffix,
                                                         std::shared_ptr<ShardCache> cache,
                                                         RemoteFilesOptions options = {});
  // The files `files` (at least one), as listed: nothing is asked of the server until a file is
  // read. `location` names them in messages (a folder's redacted URL).
  static Result<std::shared_ptr<const RemoteFiles>> open_listed(std::vector<ListedFile> files,
                                                                std::string location,
                                                                std::shared_ptr<ShardCache> cache,
                                                                RemoteFilesOptions options = {});

  const std::vector<std::string>& names() const override { return names_; }
  Result<FileIdentity> identity(size_t file) const override { return files_[file].identity; }
  std::string key(size_t file) const override { return files_[file].key; }
  Result<OpenFile> open(size_t file, const std::function<bool()>& cancelled) const override;
  void fetch_ahead(const std::vector<size_t>& files) const override;
  void fetch_pieces_ahead(const std::vector<size_t>& pieces) const override;
  void plan(std::function<int64_t(size_t file)> next_read, int64_t position) const override;
  Result<std::string> read_ranges(const FilePiece& piece) const override;
  Status declare_pieces(const std::vector<FilePiece>& pieces) const override;
  Result<std::string> read_piece(size_t index, const FilePiece& piece,
                                 const std::function<bool()>& cancelled) const override;
  ~RemoteFiles() override;

  // A fixed horizon's downloads at once.
  static constexpr int kAheadDownloads = 2;
  // The most units fetch_ahead and fetch_pieces_ahead look at (a tuned horizon's deepest).
  static constexpr int kUnitsListed = PrefetchInputs().max_depth;

  // At most `streams` downloads at once from now on; before the first fetch ahead.
  void limit_streams(int streams) const { max_streams_ = streams; }
  // The horizon of files (`pieces` false) or pieces fetched ahead now.
  AheadHorizon horizon(bool pieces) const;

  // The spec with every URL redacted, for messages.
  const std::string& location() const { return location_; }

 private:
  struct File {
    std::shared_ptr<const ObjectStore> store;  // of the file's folder
    std::string name;                          // in its folder
    std::string normal;                        // its URL, normalised (RemoteUrl::normal)
    std::string etag;
    FileIdentity identity;
    std::string key;      // its URL's cache key
    size_t group = 0;     // the cache's object it is kept in (alone when unreadable)
    uint64_t offset = 0;  // where its bytes are in that object
    Status unreadable;    // ListedFile's
  };
  // The files [first, end) kept as one object of the cache.
  struct Group {
    size_t first = 0;
    size_t end = 0;
  };
  RemoteFiles(std::shared_ptr<ShardCache> cache, DatasetCache objects, RemoteFilesOptions options);
  // The files `listed`, their part of the cache named by `part`.
  static Result<std::shared_ptr<const RemoteFiles>> create(std::vector<ListedFile> listed,
                                                           const std::string& part,
                                                           std::string location,
                                                           std::shared_ptr<ShardCache> cache,
                                                           RemoteFilesOptions options);
  // What tunes the horizon of one kind of unit (files, pieces): the measured bandwidth and pace.
  struct Measured {
    mutable Mutex mutex;
    PrefetchMeter meter STOKER_GUARDED_BY(mutex);
    int64_t reads STOKER_GUARDED_BY(mutex) = 0;      // units the reader read while planned
    double unit_bytes STOKER_GUARDED_BY(mutex) = 0;  // the mean unit's
  };
  AheadHorizon horizon_of(const Measured& measured) const;
  // The threads of each kind's downloads ahead: the most streams its horizon may have.
  int threads_ahead() const;
  // The download of group `group`'s files into the cache.
  ShardDownload download_of(size_t group) const;
  // Group `group` pinned in the cache: found, or downloaded now (`now`: for a reader that waits)
  // or ahead; `cancelled` (may be empty) turning true ends it.
  Result<CachedShard> fetch_group(size_t group, bool now,
                                  const std::function<bool()>& cancelled) const
      STOKER_EXCLUDES(plan_mutex_);
  // File `file` alone, GETted into a file that is not kept: its own error.
  Result<OpenFile> open_alone(size_t file, const std::function<bool()>& cancelled) const;
  // `download` timed into `measured`'s bandwidth.
  static ShardDownload timed(ShardDownload download, Measured& measured);
  // A unit read by the reader, counted in `measured`'s pace when the reader has a plan.
  void count_read(Measured& measured) const STOKER_EXCLUDES(plan_mutex_);
  // What eviction knows for admitting `unit` (a group, or a declared piece), needed at the
  // plan's position now (`now`) or at its next read (a group's: its files' soonest).
  EvictionAdvice advice(size_t unit, bool now) const STOKER_EXCLUDES(plan_mutex_);
  // The pieces, as declared, and their part of the cache.
  struct Pieces {
    std::vector<FilePiece> pieces;
    DatasetCache cache;
  };
  // Piece `index` of `declared`, pinned in its cache: found or GETted by range; `now` for a
  // reader that waits for it; `cancelled` (may be empty) turning true ends it.
  Result<CachedShard> fetch_piece(const Pieces& declared, size_t index, bool now,
                                  const std::function<bool()>& cancelled) const
      STOKER_EXCLUDES(plan_mutex_);
  // The pieces declared, or null.
  std::shared_ptr<const Pieces> declared() const STOKER_EXCLUDES(plan_mutex_);

  std::shared_ptr<ShardCache> cache_;  // keeps the cache open while objects_ is used
  DatasetCache objects_;
  std::vector<File> files_;
  std::vector<Group> groups_;       // a file each, but where options_.group_files > 1
  std::vector<std::string> names_;  // redacted URLs
  std::string location_;
  RemoteFilesOptions options_;
  mutable std::atomic<int> max_streams_;
  mutable Measured files_measured_, pieces_measured_;
  mutable Mutex plan_mutex_;
  mutable std::function<int64_t(size_t)> next_read_
      STOKER_GUARDED_BY(plan_mutex_);  // unset: no plan
  mutable int64_t position_ STOKER_GUARDED_BY(plan_mutex_) = 0;
  // Set once by declare_pieces.
  mutable std::shared_ptr<const Pieces> pieces_ STOKER_GUARDED_BY(plan_mutex_);
  // The downloads ahead, of files and of pieces, started by the first fetch_ahead and
  // fetch_pieces_ahead; gone first (declared last).
  class Ahead;
  mutable std::once_flag ahead_started_, pieces_ahead_started_;
  mutable std::unique_ptr<Ahead> ahead_, pieces_ahead_;
};

}  // namespace stoker::remote
