#include "stoker/cache/shard_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>

#include "stoker/store/in_place_files.h"
#include "stoker/store/shard_check.h"
#include "stoker/store/shard_schedule.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockFile = "cache.lock";
constexpr const char* kUsersDir = "users";
constexpr auto kPollInterval = std::chrono::milliseconds(10);

std::string marker_text(int layout = kShardCacheLayout) {
  return fmt::format("stoker shard cache\nlayout {}\n", layout);
}

// "12.3 MB", or "4096 bytes" below 0.1 MB (a test's tiny shards).
std::string megabytes(uint64_t bytes) {
  return bytes < 100'000 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} MB", bytes / 1e6);
}

// Unlinks `path` if no process pins it (the exclusive flock is free); whether it did.
bool unlink_if_unpinned(const std::string& path) {
  Result<FileLock> lock = FileLock::acquire(path, LockMode::kExclusive, false, false);
  if (!lock.is_ok() || !lock.value().still_at(path)) return false;
  return ::unlink(path.c_str()) == 0;
}

// Whether `dir` holds nothing but a marker being written and the saved forms of the sources
// read in place (a tar's index, an image folder's listing: util/saved_form.h), which share
// the cache folder.
bool empty_but_for_marker_temporaries(const std::string& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(std::string(kShardCacheMarker) + ".tmp-", 0) != 0 &&
        !(is_saved_form_folder(name) && it->is_directory(ec)))
      return false;
  }
  return !ec;
}

// Every record's XXH3.
Status verify_records(const ShardReader& reader, uint64_t records) {
  for (uint64_t r = 0; r < records; ++r) STOKER_RETURN_IF_ERROR(reader.verify_record(r));
  return Status::ok();
}

Status make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot make the cache folder " + dir + ": " + ec.message());
  return Status::ok();
}

}  // namespace

uint64_t free_disk_bytes(const std::string& dir) {
  struct statvfs fs;
  if (::statvfs(dir.c_str(), &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

Result<std::shared_ptr<ShardCache>> ShardCache::open(const std::string& dir, uint64_t budget_bytes,
                                                     std::string advice) {
  STOKER_RETURN_IF_ERROR(make_dirs(dir));
  const std::string marker = dir + "/" + kShardCacheMarker;
  if (!fs::exists(marker)) {
    // Another process may have made the marker and its first dataset since the check above:
    // a stoker writes the marker before anything else, so look for it again before refusing.
    if (!empty_but_for_marker_temporaries(dir) && !fs::exists(marker)) {
      return invalid_argument(dir + ": not a stoker cache (no " + kShardCacheMarker +
                              ") and not empty; name an empty or new folder for the cache");
    }
    if (!fs::exists(marker)) STOKER_RETURN_IF_ERROR(write_file_atomically(marker, marker_text()));
  }
  {
    // The .part files of downloaders gone (killed, interrupted) hold no shard but count against
    // the budget: removed now, under the lock admissions take, not when room is next needed.
    STOKER_ASSIGN_OR_RETURN(FileLock cache_lock,
                            FileLock::acquire(dir + "/" + kLockFile, LockMode::kExclusive,
                                              /*wait=*/true, true));
    STOKER_ASSIGN_OR_RETURN(std::string text, read_file(marker, 4096));
    // Layout 1 is this one without the ledger: its first sync builds it.
    if (text == marker_text(1))
      STOKER_RETURN_IF_ERROR(write_file_atomically(marker, marker_text()));
    else if (text != marker_text()) {
      return invalid_argument(marker + ": another cache layout than this stoker's (" +
                              std::to_string(kShardCacheLayout) +
                              "); name another folder for the cache");
    }
    for (const std::string& d : cache_dataset_dirs(dir))
      for (const CacheFile& part : list_cache_files(d + "/tmp", is_download_name))
        unlink_if_unpinned(part.path);
  }
  // This cache's user record: its shared flock tells others it is alive.
  static std::atomic<uint64_t> users{0};
  STOKER_RETURN_IF_ERROR(make_dirs(dir + "/" + kUsersDir));
  while (true) {
    const std::string user_path =
        fmt::format("{}/{}/{}.{}", dir, kUsersDir, ::getpid(), users.fetch_add(1));
    STOKER_ASSIGN_OR_RETURN(FileLock user,
                            FileLock::acquire(user_path, LockMode::kShared, false, true));
    // (another's other_users() may have taken it for a dead one's between open and flock)
    if (user.still_at(user_path)) {
      return std::shared_ptr<ShardCache>(
          new ShardCache(dir, budget_bytes, std::move(advice), user_path, std::move(user)));
    }
  }
}

ShardCache::~ShardCache() { ::unlink(user_path_.c_str()); }

int ShardCache::other_users() const {
  int others = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_ + "/" + kUsersDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string path = it->path().string();
    if (path == user_path_) continue;
    // A record whose flock can be taken is a user gone (its process killed, say).
    if (!unlink_if_unpinned(path)) ++others;
  }
  return others;
}

Result<ShardCache::Locked> ShardCache::lock() const {
  STOKER_ASSIGN_OR_RETURN(
      FileLock file, FileLock::acquire(dir_ + "/" + kLockFile, LockMode::kExclusive, true, true));
  Locked locked{std::move(file), std::unique_lock<std::mutex>(ledger_mutex_)};
  STOKER_RETURN_IF_ERROR(ledger_.sync());
  return locked;
}

uint64_t ShardCache::contents_digest() const {
  uint64_t digest = 14695981039346656037u;  // FNV-1a over the ledger's version and downloads
  const auto add = [&](const std::string& text) {
    for (unsigned char c : text) digest = (digest ^ c) * 1099511628211u;
  };
  Result<Locked> locked = lock();
  add(locked.is_ok() ? std::to_string(ledger_.version()) : locked.status().message());
  for (const std::string& d : cache_dataset_dirs(dir_))
    for (const CacheFile& f : list_cache_files(d + "/tmp", is_download_name))
      add(f.path + "\n" + std::to_string(f.bytes) + "\n");
  return digest;
}

Result<DatasetCache> ShardCache::part(const std::string& key, const std::string& source,
                                      std::vector<ShardInfo> shards, Schema schema, bool objects,
                                      bool sealed) const {
  if (key.empty() || key.size() > 64 ||
      key.find_first_not_of("0123456789abcdef") != std::string::npos)
    return invalid_argument("cache key '" + key + "': not 1 to 64 lower-case hex digits");
  const std::string dir = dir_ + "/" + key;
  for (const char* sub : {"/shards", "/locks", "/tmp"})
    STOKER_RETURN_IF_ERROR(make_dirs(dir + sub));
  if (!fs::exists(dir + "/source.json")) {
    STOKER_RETURN_IF_ERROR(write_file_atomically(
        dir + "/source.json",
        nlohmann::json({{"source", objects ? "objects read in place" : source}}).dump() + "\n"));
  }
  return DatasetCache(shared_from_this(), dir, source, std::move(shards), std::move(schema),
                      objects, sealed);
}

Result<DatasetCache> ShardCache::dataset(const std::string& key, const std::string& source,
                                         const Manifest& manifest) const {
  return part(key, source, manifest.shards, manifest.schema, /*objects=*/false, false);
}

Result<DatasetCache> ShardCache::objects(const std::string& source, std::vector<ShardInfo> objects,
                                         ObjectCheck check) const {
  for (const ShardInfo& object : objects) {
    if (object.file.empty() || object.file.find('/') != std::string::npos || object.file == "." ||
        object.file == "..")
      return invalid_argument(source + ": object name '" + object.file + "' is not a file name");
  }
  return part(kObjectsKey, source, std::move(objects), Schema(), /*objects=*/true,
              check == ObjectCheck::kSealed);
}

ShardCacheUsage ShardCache::usage() const {
  ShardCacheUsage usage;
  if (Result<Locked> locked = lock(); locked.is_ok()) {
    usage.bytes = ledger_.bytes();
    usage.shards = ledger_.files();
  }
  for (const std::string& d : cache_dataset_dirs(dir_))
    for (const CacheFile& f : list_cache_files(d + "/tmp", is_download_name))
      usage.bytes += f.bytes;
  return usage;
}

std::string DatasetCache::shard_path(int shard) const {
  const ShardInfo& info = shards_[shard];
  return fmt::format("{}/shards/{}.{:016x}", dir_, info.file, info.index_checksum);
}

bool DatasetCache::holds(int shard) const {
  struct stat st;
  return ::stat(shard_path(shard).c_str(), &st) == 0;
}

Status DatasetCache::seal(int shard, const std::string& path, int fd, bool write) const {
  const uint64_t bytes = shards_[shard].bytes;
  std::string data(bytes + kSealBytes, '\0');
  STOKER_ASSIGN_OR_RETURN(size_t got, read_at(fd, path, 0, reinterpret_cast<uint8_t*>(data.data()),
                                              write ? bytes : data.size()));
  if (got != (write ? bytes : data.size())) return corrupt(path + ": shorter than its size");
  uint8_t sum[kSealBytes];
  const uint64_t hash = xxh3_64(data.data(), bytes);
  std::memcpy(sum, &hash, kSealBytes);
  if (write) {
    if (::pwrite(fd, sum, kSealBytes, static_cast<off_t>(bytes)) !=
        static_cast<ssize_t>(kSealBytes))
      return io_error("cannot write " + path + ": " + std::strerror(errno));
    return Status::ok();
  }
  if (std::memcmp(sum, data.data() + bytes, kSealBytes) != 0)
    return corrupt(path + ": its bytes do not match the XXH3 it ends with (torn by a crash?)");
  return Status::ok();
}

Result<std::optional<ShardReader>> DatasetCache::check(int shard, const std::string& path, int fd,
                                                       bool downloaded) const {
  const ShardInfo& info = shards_[shard];
  if (objects_) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return io_error(path + ": " + std::strerror(errno));
    if (static_cast<uint64_t>(st.st_size) != file_bytes(shard))
      return corrupt(
          fmt::format("{}: {} bytes, its listing says {}", path, st.st_size, file_bytes(shard)));
    std::atomic<bool>& sum_checked = (*records_checked_)[shard];
    if (sealed_ && !downloaded && !sum_checked.load()) {
      STOKER_RETURN_IF_ERROR(seal(shard, path, fd, /*write=*/false));
      sum_checked = true;
    }
    return std::optional<ShardReader>();
  }
  STOKER_ASSIGN_OR_RETURN(ShardReader reader, ShardReader::open(path));
  STOKER_RETURN_IF_ERROR(check_shard_matches(reader, info, schema_));
  std::atomic<bool>& records_checked = (*records_checked_)[shard];
  if (downloaded || !records_checked.load()) {
    STOKER_RETURN_IF_ERROR(verify_records(reader, info.records));
    records_checked = true;
  }
  return std::optional<ShardReader>(std::move(reader));
}

Result<std::optional<CachedShard>> DatasetCache::find(int shard) const {
  const std::string path = shard_path(shard);
  Result<FileLock> pin = FileLock::acquire(path, LockMode::kShared, /*wait=*/true, false);
  if (!pin.is_ok()) {
    if (pin.status().code() == StatusCode::kNotFound) return std::optional<CachedShard>();
    return pin.status();
  }
  if (!pin.value().still_at(path)) return std::optional<CachedShard>();  // evicted meanwhile
  Result<std::optional<ShardReader>> checked = check(shard, path, pin.value().fd(), false);
  if (checked.is_ok()) {
    ::futimens(pin.value().fd(), nullptr);  // its last use, for eviction across datasets
    if (objects_) return std::optional<CachedShard>(CachedShard(std::move(pin).value()));
    return std::optional<CachedShard>(
        CachedShard(std::move(pin).value(), std::move(*checked.value())));
  }
  ::close(pin.value().release());  // lets go of the pin, so that the file can go
  if (Result<ShardCache::Locked> locked = cache_->lock(); locked.is_ok()) evict(path);
  return corrupt(fmt::format("{} (in the cache {}; removed, so that it is downloaded again)",
                             checked.status().message(), cache_->dir()));
}

Result<CachedShard> DatasetCache::fetch(int shard, const ShardDownload& download,
                                        const EvictionAdvice& advice,
                                        const std::function<bool()>& cancelled,
                                        const std::function<void()>& admitted) const {
  const std::string lock_path = fmt::format("{}/locks/{}.{:016x}.lock", dir_, shards_[shard].file,
                                            shards_[shard].index_checksum);
  bool told = false;
  const auto admitted_once = [&] {
    if (!told && admitted) admitted();
    told = true;
  };
  bool torn_removed = false;  // a sealed object found torn is removed, then downloaded again
  while (true) {
    Result<std::optional<CachedShard>> looked = find(shard);
    if (sealed_ && !torn_removed && looked.status().code() == StatusCode::kCorrupt) {
      torn_removed = true;
      continue;
    }
    STOKER_ASSIGN_OR_RETURN(std::optional<CachedShard> found, std::move(looked));
    if (found) return std::move(*found);
    Result<FileLock> downloading = FileLock::acquire(lock_path, LockMode::kExclusive, false, true);
    if (downloading.is_ok()) {
      STOKER_ASSIGN_OR_RETURN(found, find(shard));  // finished while this one waited
      if (found) return std::move(*found);
      return admit(shard, download, advice, cancelled, admitted_once);
    }
    if (downloading.status().code() != StatusCode::kAlreadyExists) return downloading.status();
    admitted_once();  // another admits this one: this caller's turn is over
    if (cancelled && cancelled())
      return Status(StatusCode::kCancelled, shards_[shard].file + ": fetch cancelled");
    std::this_thread::sleep_for(kPollInterval);  // another process downloads it
  }
}

void DatasetCache::evict(const std::string& path) const {
  Result<FileLock> lock = FileLock::acquire(path, LockMode::kExclusive, false, false);
  if (!lock.is_ok()) {
    if (lock.status().code() == StatusCode::kNotFound) {  // removed by hand
      cache_->ledger_.remove(path);
      cache_->ledger_.changed(path);
    }
    return;
  }
  if (!lock.value().still_at(path)) return;
  cache_->ledger_.remove(path);  // first: a kill before the unlink leaves it ahead of the disk
  ::unlink(path.c_str());
  cache_->ledger_.changed(path);
}

Status DatasetCache::make_room(int shard, const EvictionAdvice& advice, bool disk_full) const {
  CacheLedger& ledger = cache_->ledger_;
  const uint64_t needed = file_bytes(shard);
  uint64_t parts = 0;
  for (const std::string& d : cache_dataset_dirs(cache_->dir())) {
    for (const CacheFile& part : list_cache_files(d + "/tmp", is_download_name)) {
      if (!unlink_if_unpinned(part.path)) parts += part.bytes;  // its writer is alive
    }
  }
  const auto used = [&] { return ledger.bytes() + parts; };
  // A full disk holds no more than the cache has on it and the room left there.
  const auto budget = [&] {
    return disk_full ? std::min(cache_->budget_bytes(), used() + free_disk_bytes(dir_))
                     : cache_->budget_bytes();
  };
  uint64_t limit = budget();
  auto fits = [&] { return used() + needed <= limit; };
  std::unordered_map<std::string, int> shard_at;  // this manifest's cached names
  // Once more after a rebuild of the ledger: a file removed by hand never costs room.
  for (bool rebuilt = false; !fits(); rebuilt = true) {
    if (rebuilt) {
      ledger.rebuild();
      limit = budget();
      if (fits()) break;
    }
    if (shard_at.empty()) {
      for (size_t s = 0; s < shards_.size(); ++s)
        shard_at.emplace(shard_path(static_cast<int>(s)), static_cast<int>(s));
    }
    // 1. This dataset's shards that its manifest no longer names (an older version). (Objects
    // read in place share one part: those of other sources go as other datasets' do.)
    if (!objects_) {
      for (const CacheFile& f : ledger.files_of(dir_))
        if (!shard_at.count(f.path) && !fits()) evict(f.path);
    }
    // 2. Other datasets' shards, least recently used first: their future is unknown here.
    const std::string mine = dir_ + "/";
    ledger.by_last_use([&](const CacheFile& f) {
      if (fits()) return false;
      const bool named = objects_ ? shard_at.count(f.path) > 0 : f.path.rfind(mine, 0) == 0;
      if (!named) evict(f.path);  // pinned ones stay
      return true;
    });
    if (fits()) break;
    // 3. This dataset's, by `advice`: pinned ones (a flock held) and those needed soon stay.
    std::vector<CacheFile> candidates;
    std::vector<CacheEntry> entries;
    for (const CacheFile& f : ledger.files_of(dir_)) {
      const auto at = shard_at.find(f.path);
      if (at == shard_at.end() || at->second == shard) continue;  // an old version: gone above
      struct stat st;
      if (::lstat(f.path.c_str(), &st) != 0) continue;
      const int64_t next = advice.next_use ? advice.next_use(at->second) : ShardSchedule::kNever;
      Result<FileLock> probe = FileLock::acquire(f.path, LockMode::kExclusive, false, false);
      entries.push_back(
          {f.bytes, next, modified_ns(st), !probe.is_ok(), next < advice.needed_soon_before});
      candidates.push_back(f);
    }
    const int64_t incoming = advice.next_use ? advice.next_use(shard) : 0;
    const uint64_t short_by = used() + needed - limit;
    if (auto victims = choose_victims(advice.policy, entries, short_by, incoming)) {
      for (size_t i : *victims) evict(candidates[i].path);
    }
    if (fits() || rebuilt) break;
  }
  if (fits()) return Status::ok();
  if (disk_full) {
    return io_error(fmt::format(
        "cache {}: its disk has no room for {} ({}) beside the {} it holds that are in use or "
        "needed sooner, and other files; free some space or name another --cache-dir",
        cache_->dir(), shards_[shard].file, megabytes(needed), megabytes(used())));
  }
  const int peers = cache_->other_users();
  return no_room(fmt::format(
      "cache {}: its budget of {} cannot hold {} ({}) beside the {} it holds that are in use "
      "or needed sooner{}; {}",
      cache_->dir(), megabytes(limit), shards_[shard].file, megabytes(needed), megabytes(used()),
      peers > 0 ? fmt::format(", here or by {} other loader{} sharing the cache", peers,
                              peers > 1 ? "s" : "")
                : std::string(),
      cache_->advice_));
}

Result<CachedShard> DatasetCache::admit(int shard, const ShardDownload& download,
                                        const EvictionAdvice& advice,
                                        const std::function<bool()>& cancelled,
                                        const std::function<void()>& admitted) const {
  static std::atomic<uint64_t> counter{0};
  const ShardInfo& info = shards_[shard];
  const std::string part =
      fmt::format("{}/tmp/{}.{}.{}.part", dir_, info.file, ::getpid(), counter.fetch_add(1));
  std::optional<FileLock> writer;  // its shared flock marks the .part alive
  int fd = -1;
  auto discard = [&](Status status) -> Status {
    if (fd >= 0) ::close(fd);
    ::unlink(part.c_str());
    return status;
  };
  {
    STOKER_ASSIGN_OR_RETURN(ShardCache::Locked locked, cache_->lock());
    STOKER_RETURN_IF_ERROR(make_room(shard, advice, /*disk_full=*/false));
    fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("cannot create " + part + ": " + std::strerror(errno));
    Result<FileLock> lock = FileLock::acquire(part, LockMode::kShared, false, false);
    if (!lock.is_ok()) return discard(lock.status());
    writer.emplace(std::move(lock).value());
    // An empty object has nothing to reserve (posix_fallocate refuses a length of 0: EINVAL).
    int rc = file_bytes(shard) == 0
                 ? 0
                 : ::posix_fallocate(fd, 0, static_cast<off_t>(file_bytes(shard)));
    if (rc == ENOSPC) {  // the disk is fuller than the budget knows: evict for it, once
      if (::ftruncate(fd, 0) != 0) return discard(io_error("cannot truncate " + part));
      const Status room = make_room(shard, advice, /*disk_full=*/true);
      if (!room.is_ok()) return discard(room);
      rc = ::posix_fallocate(fd, 0, static_cast<off_t>(file_bytes(shard)));
    }
    if (rc != 0) {
      return discard(
          io_error(fmt::format("cache {}: no room on its disk for {} ({}): {}", cache_->dir(),
                               info.file, megabytes(info.bytes), std::strerror(rc))));
    }
  }
  if (admitted) admitted();
  const Status downloaded = download(info, fd, cancelled);
  if (!downloaded.is_ok()) return discard(downloaded);
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != file_bytes(shard)) {
    return discard(corrupt(fmt::format("{}/{}: {} bytes downloaded, {} says {}; nothing was kept",
                                       source_, info.file, st.st_size,
                                       objects_ ? "its listing" : "the manifest", info.bytes)));
  }
  // A sealed object is checked by its XXH3 when next found, not synced (shard_cache.h).
  if (sealed_) {
    if (const Status sealed = seal(shard, part, fd, /*write=*/true); !sealed.is_ok())
      return discard(sealed);
  } else if (::fsync(fd) != 0) {
    return discard(io_error("cannot sync " + part + ": " + std::strerror(errno)));
  }
  if (Result<std::optional<ShardReader>> verified = check(shard, part, fd, true);
      !verified.is_ok()) {
    // The .part named at the message's start is gone: the shard's URL stands for it.
    std::string detail = verified.status().message();
    if (detail.rfind(part + ": ", 0) == 0) detail.erase(0, part.size() + 2);
    return discard(corrupt(fmt::format(
        "{}/{}: does not match the manifest this run read ({}); the dataset changed on the "
        "server since, or the file there is damaged; nothing was kept",
        source_, info.file, detail)));
  }
  const std::string path = shard_path(shard);
  {
    // Into the ledger, then its name (a kill between the two leaves the ledger ahead: rebuilt).
    STOKER_ASSIGN_OR_RETURN(ShardCache::Locked locked, cache_->lock());
    cache_->ledger_.add(path, file_bytes(shard), modified_ns(st));
    if (::rename(part.c_str(), path.c_str()) != 0) {
      const int error = errno;
      cache_->ledger_.remove(path);
      return discard(
          io_error("cannot rename " + part + " to " + path + ": " + std::strerror(error)));
    }
    cache_->ledger_.changed(path);
  }
  ::close(fd);
  if (!sealed_) STOKER_RETURN_IF_ERROR(fsync_directory(dir_ + "/shards"));
  // The writer's flock, on the same file under its shard name, is now the pin.
  if (objects_) return CachedShard(std::move(*writer));
  STOKER_ASSIGN_OR_RETURN(ShardReader reader, ShardReader::open(path));
  return CachedShard(std::move(*writer), std::move(reader));
}

}  // namespace stoker
