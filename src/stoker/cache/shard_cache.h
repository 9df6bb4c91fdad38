#pragma once
// ShardCache: a directory of verified shards of remote datasets, bounded by a byte budget and
// shared by every process of one machine (docs/REMOTE-DESIGN.md section 3).
//
//   DIR/STOKER-CACHE                     marker and layout version; a non-empty DIR without
//                                        it is refused, so the cache never deletes what it
//                                        did not write
//   DIR/cache.lock                       flock: admission, eviction and accounting
//   DIR/cache.ledger                     the files held: bytes, last uses (cache_ledger.h)
//   DIR/<key>/source.json                the dataset's redacted URL (for people)
//   DIR/<key>/shards/<file>.<index>      verified shards, named by content (the manifest's
//                                        index checksum in hex): a new dataset version reuses
//                                        unchanged shards and never reads a stale one
//   DIR/<key>/locks/<file>.<index>.lock  one download per shard per machine
//   DIR/<key>/tmp/<file>.<pid>.part      downloads in progress, flocked by their writer
//   DIR/0b1ec75/                         the objects read in place (ShardCache::objects)
//   DIR/users/<pid>.<n>                  one per open ShardCache, flocked while it lives: the
//                                        processes that may free room for another
//
// A shard is readable only while pinned: mapped and holding a shared flock on its file. An
// evictor unlinks a shard only once it holds the exclusive flock, so a pinned shard is never
// evicted by any process; a pin checks after its flock that the name still holds its file.
// A download is written into a preallocated .part (ENOSPC before the transfer, not after: the
// cache then evicts what it may to make room on the disk and tries once more),
// checked in full (size, header, index against the manifest's checksum, every record's
// XXH3), fsynced and renamed into shards/ (docs/DESIGN.md contract 7): a kill leaves no shard
// or a verified one, and a .part whose writer is gone is removed when the cache is next opened
// (and by the next admission).
// The budget covers shards/ and .part files of every dataset, summed under cache.lock: the
// shards from the ledger (cache_ledger.h: appended before each file is added or removed, rebuilt
// by a full listing whenever it disagrees with the disk, and before a budget is found without
// room), the .part files (downloads in flight: few) from their folders. An admission's cost then
// does not grow with the files cached (docs/BENCHMARKS.md, "The remote cache's admissions").
//
// Objects read in place (WebDataset tars) are kept the same way, in a part of their own
// (ShardCache::objects): a file there is named by the XXH3 of the object's URL, ETag and size,
// downloaded only while the object keeps that ETag, and checked by its size only (a tar's
// index checks each member's bytes when read). Sealed objects (ObjectCheck::kSealed: a remote
// video's 64 KiB blocks) end with the XXH3-64 of their bytes (8 bytes, the machine's order, past
// the object's size: the ledger and the budget count them), written at admission and checked the
// first time a DatasetCache finds the file; they are renamed into place without an fsync of
// the file or its folder (two fsyncs an admission were most of a first epoch's cost), so that a
// crash may leave one torn (its bytes not yet on disk) or gone: a torn one fails its checksum,
// is removed and downloaded again by the fetch that found it.
//
// Thread-safe: ShardCache and DatasetCache may be used from any thread (state is on disk,
// under flocks); CachedShard is an immutable pin.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "stoker/cache/cache_ledger.h"
#include "stoker/cache/eviction_policy.h"
#include "stoker/store/manifest.h"
#include "stoker/store/shard_reader.h"
#include "stoker/util/file_lock.h"
#include "stoker/util/status.h"

namespace stoker {

// The part (DIR/<key>) of the objects read in place (ShardCache::objects).
inline constexpr const char* kObjectsKey = "0b1ec75";

// How ShardCache::objects checks a cached object: its size, or its size and the XXH3 it ends
// with (above).
enum class ObjectCheck { kSize, kSealed };

// The bytes a sealed object's file holds past the object's: its XXH3-64.
inline constexpr uint64_t kSealBytes = 8;

// The marker's name and the layout version it holds.
inline constexpr const char* kShardCacheMarker = "STOKER-CACHE";
inline constexpr int kShardCacheLayout = 2;  // 1: without the ledger, upgraded at open

// Writes a shard's bytes into the open, preallocated file `fd` (pwrite at their offsets), e.g.
// from an ObjectStore; a non-ok Status ends the fetch and what was written is discarded.
// `cancelled` (may be empty; any of the download's threads may poll it) turning true ends the
// download with kCancelled, promptly: a loader being stopped does not wait for a transfer.
using ShardDownload =
    std::function<Status(const ShardInfo& shard, int fd, const std::function<bool()>& cancelled)>;

// What eviction knows about this dataset's future (from the loader's ShardSchedule): the next
// use of each of its shards, by manifest index, and the use from which a shard is needed soon
// (the next batches' positions: never evicted). Another dataset's shards have no known future:
// they go first, least recently used first.
struct EvictionAdvice {
  EvictionPolicy policy = EvictionPolicy::kNextUse;
  std::function<int64_t(int shard)> next_use;  // unset: every shard "never" (all alike)
  int64_t needed_soon_before = 0;              // next use < this: protected
};

// A pinned shard: mapped, checked, and not evictable while this object lives; or a pinned
// object (ShardCache::objects), read through fd(). Move-only.
class CachedShard {
 public:
  CachedShard(FileLock pin, ShardReader reader)
      : pin_(std::move(pin)), reader_(std::move(reader)) {}
  explicit CachedShard(FileLock pin) : pin_(std::move(pin)) {}
  // A shard's reader (not an object's).
  const ShardReader& reader() const { return *reader_; }
  // The cached file, open read-only.
  int fd() const { return pin_.fd(); }

 private:
  FileLock pin_;
  std::optional<ShardReader> reader_;
};

class ShardCache;

// One dataset's part of the cache, for the manifest it was opened with.
class DatasetCache {
 public:
  // Pins shard `shard` (manifest index) if the cache holds it; nullopt if not. kCorrupt if the
  // file there fails its header or index checks, or, the first time this DatasetCache finds it
  // (a shard it did not download: an earlier run's, another process's), any record's XXH3
  // (it is then removed, so that fetch() downloads it again).
  Result<std::optional<CachedShard>> find(int shard) const;

  // Pins shard `shard`: found, or downloaded by `download` (by one process of the machine at a
  // time: the others wait for it, polling it and `cancelled` every 10 ms), verified in full and
  // admitted, evicting by `advice` to make room. kNoRoom (one line naming the directory
  // and sizes) when the budget cannot make room without evicting what is pinned or what
  // `advice` protects; kCorrupt naming the shard's URL when its bytes fail verification (nothing is
  // kept: the dataset changed on the server since its manifest was read, or is damaged there);
  // kCancelled when `cancelled` turns true while waiting or downloading (it is the download's);
  // the download's own Status.
  // `admitted` (optional) is called at most once: when room is made for this caller's download,
  // before the transfer, or when another's download of the shard is found running. A caller
  // that admits shards in an order of its own waits for it (RemoteShardSource).
  Result<CachedShard> fetch(int shard, const ShardDownload& download, const EvictionAdvice& advice,
                            const std::function<bool()>& cancelled = nullptr,
                            const std::function<void()>& admitted = nullptr) const;

  // Whether the cache holds shard `shard` now (a hint: another process may evict it).
  bool holds(int shard) const;

  const std::string& dir() const { return dir_; }
  const ShardCache& cache() const { return *cache_; }

 private:
  friend class ShardCache;
  DatasetCache(std::shared_ptr<const ShardCache> cache, std::string dir, std::string source,
               std::vector<ShardInfo> shards, Schema schema, bool objects, bool sealed)
      : cache_(std::move(cache)),
        dir_(std::move(dir)),
        source_(std::move(source)),
        shards_(std::move(shards)),
        schema_(std::move(schema)),
        objects_(objects),
        sealed_(sealed),
        records_checked_(std::make_shared<std::vector<std::atomic<bool>>>(shards_.size())) {}

  std::string shard_path(int shard) const;
  // The bytes shard `shard`'s file holds: its own, and a sealed object's XXH3.
  uint64_t file_bytes(int shard) const { return shards_[shard].bytes + (sealed_ ? kSealBytes : 0); }
  // Writes the XXH3 of the first shards_[shard].bytes bytes of `fd` after them (a sealed
  // object's admission), or checks it (`write` false: kCorrupt naming `path` where it differs).
  Status seal(int shard, const std::string& path, int fd, bool write) const;
  // Checks the file `path` open as `fd` as shard `shard` (an object: its size), giving its
  // reader (none for an object); `downloaded`: this DatasetCache wrote it.
  Result<std::optional<ShardReader>> check(int shard, const std::string& path, int fd,
                                           bool downloaded) const;
  // Removes `path` if no process pins it, from the ledger first (under cache.lock).
  void evict(const std::string& path) const;
  // Evicts (under cache.lock) until shard `shard` fits the budget, or with `disk_full` (a
  // preallocation found the disk full) also the disk's free space.
  Status make_room(int shard, const EvictionAdvice& advice, bool disk_full) const;
  Result<CachedShard> admit(int shard, const ShardDownload& download, const EvictionAdvice& advice,
                            const std::function<bool()>& cancelled,
                            const std::function<void()>& admitted) const;

  std::shared_ptr<const ShardCache> cache_;
  std::string dir_;                // DIR/<key>
  std::string source_;             // the dataset's redacted URL, for messages
  std::vector<ShardInfo> shards_;  // the manifest's
  Schema schema_;
  bool objects_;  // ShardCache::objects' part: files checked by size
  bool sealed_;   // objects_ that end with their XXH3 (ObjectCheck::kSealed)
  // Per shard: its records' checksums (a sealed object's) were checked by this DatasetCache (or
  // its copies).
  std::shared_ptr<std::vector<std::atomic<bool>>> records_checked_;
};

// Bytes and shards the cache holds (shards/ and .part files of every dataset).
struct ShardCacheUsage {
  uint64_t bytes = 0;
  uint64_t shards = 0;
};

// Free bytes of the file system holding `dir`, as an unprivileged writer may use them (0 if it
// cannot be asked).
uint64_t free_disk_bytes(const std::string& dir);

class ShardCache : public std::enable_shared_from_this<ShardCache> {
 public:
  // Opens (creating it if missing or empty) the cache at `dir` with `budget_bytes`; `advice`
  // ends the message of a budget without room (the caller's names of the options).
  // kInvalidArgument if `dir` is a non-empty folder without the marker, or holds another
  // layout version; kIoError naming the path if it cannot be made.
  static Result<std::shared_ptr<ShardCache>> open(
      const std::string& dir, uint64_t budget_bytes,
      std::string advice = "raise --cache-gb or lower --shuffle-window");

  // The part of dataset `key` (lower-case hex: the cache key of its URL), made if missing,
  // for `manifest`; `source` (the redacted URL) goes into its source.json.
  Result<DatasetCache> dataset(const std::string& key, const std::string& source,
                               const Manifest& manifest) const;

  // The part of the cache holding objects read in place, for `objects` (ShardInfo: file, the
  // object's name in its folder; bytes, its size; index_checksum, the XXH3 of its URL, ETag and
  // size) of `source` (their folder's redacted URL, or the spec naming them), made if missing.
  // One part holds the objects of every source, so that two sources naming one object share
  // its copy; eviction takes those of other sources as it takes other datasets' shards.
  // `check`: kSealed for objects kept with their XXH3 (above).
  Result<DatasetCache> objects(const std::string& source, std::vector<ShardInfo> objects,
                               ObjectCheck check = ObjectCheck::kSize) const;

  // What the cache holds now.
  ShardCacheUsage usage() const;

  // How many other open ShardCaches (of other processes, or others of this one) use the
  // directory now: those that may free room for this one. Removes the records of users gone.
  int other_users() const;

  // A digest of the names and sizes of the shards and downloads the cache holds: it changes
  // when any of its users downloads or evicts.
  uint64_t contents_digest() const;

  ~ShardCache();
  ShardCache(const ShardCache&) = delete;
  ShardCache& operator=(const ShardCache&) = delete;

  const std::string& dir() const { return dir_; }
  uint64_t budget_bytes() const { return budget_; }

 private:
  friend class DatasetCache;
  // cache.lock held, and the ledger brought up to date with it.
  struct Locked {
    FileLock file;
    std::unique_lock<std::mutex> ledger;
  };
  Result<Locked> lock() const;
  Result<DatasetCache> part(const std::string& key, const std::string& source,
                            std::vector<ShardInfo> shards, Schema schema, bool objects,
                            bool sealed) const;
  ShardCache(std::string dir, uint64_t budget, std::string advice, std::string user_path,
             FileLock user)
      : dir_(std::move(dir)),
        budget_(budget),
        advice_(std::move(advice)),
        user_path_(std::move(user_path)),
        user_(std::move(user)),
        ledger_(dir_) {}

  std::string dir_;
  uint64_t budget_;
  std::string advice_;     // for a budget without room: "raise --cache-gb or ..."
  std::string user_path_;  // DIR/users/<pid>.<n>, flocked shared by user_ while this lives
  FileLock user_;
  mutable std::mutex ledger_mutex_;  // taken under cache.lock: this process's threads
  mutable CacheLedger ledger_;
};

}  // namespace stoker
