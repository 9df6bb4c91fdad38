#pragma once
// CacheLedger: the remote cache's record of the shards and objects it holds (DIR/cache.ledger),
// so that an admission sums the cache and finds its victims without listing it: its cost does
// not grow with the files cached (a remote video's 64 KiB blocks: 160,000 files in 10 GB).
// Measured (bench/cache_admission.cc, docs/BENCHMARKS.md): a full listing, what each admission
// did before, costs about 6 ms at 1,000 files and 50 ms at 10,000.
//
// The file: a header line (its version, a nonce each rewrite draws, the machine's boot id), then
// one line a change, each with its XXH3: "+" a file (its path in the cache, bytes, last use) or
// "-" one, appended under cache.lock before the change to the disk is made, and "d" the mtime of
// the folder changed, once it is made. Each process keeps a copy and reads only what others
// appended since (a rewrite, a new nonce: the whole file). The file is rewritten from the copy
// once it holds twice the lines it needs.
// Rebuilt by a full scan (then as exact as the listing was) when it is absent, unreadable (a
// torn or altered line), from before the machine's last boot (a crash may have lost its last
// lines, not the files'), when its last change disagrees with the disk or a shards/ folder's
// mtime is not the one it holds (a process killed between the ledger and the file; a file added
// or removed by hand; a ledger cut short), and by the cache before it finds no room
// (shard_cache.cc). A change by hand within the same tick of the file system's clock as the
// cache's last change to that folder goes unseen until then (eviction drops a file found gone).
// Last uses: a pin refreshes a file's mtime without the lock; the copy keeps each file's last use
// as last read, never later than its mtime, and eviction visits files by it, reading the mtime
// of each it reaches: one whose mtime moved is placed again, so the least recently used file is
// found after as many stats as files were used since (the LRU order a full listing gives).
//
// Not thread-safe: used under cache.lock (and the ShardCache's mutex).

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// A file's modification time in nanoseconds (what the ledger keeps as its last use).
int64_t modified_ns(const struct stat& st);

// The files of a cache as it names them, so that it counts and removes nothing else (a file put
// there by hand stays): a shard's "<file>.<16 hex digits>" and a download's "<...>.part".
bool is_cached_file_name(const std::string& name);
bool is_download_name(const std::string& name);

// A file of the cache: its path and size.
struct CacheFile {
  std::string path;
  uint64_t bytes = 0;
};

// The regular files of `dir` whose names `named` accepts, sorted by path.
std::vector<CacheFile> list_cache_files(const std::string& dir, bool (*named)(const std::string&));

// The dataset folders of the cache at `cache_dir`: its lower-case hex names.
std::vector<std::string> cache_dataset_dirs(const std::string& cache_dir);

class CacheLedger {
 public:
  explicit CacheLedger(std::string cache_dir) : dir_(std::move(cache_dir)) {}

  // Brings the copy up to date with the file, or rebuilds both (above).
  Status sync();
  // Rebuilds the copy and the file by a full scan; a file that cannot be written (a full disk)
  // is removed instead, and each sync scans until one can.
  void rebuild();

  uint64_t bytes() const { return bytes_; }
  size_t files() const { return entries_.size(); }
  // A value that changes whenever any process adds or removes a file.
  uint64_t version() const;

  // Records `path` (a full path in the cache) as added with `bytes` and last use `mtime_ns`,
  // before the caller moves it there.
  void add(const std::string& path, uint64_t bytes, int64_t mtime_ns);
  // Records `path` as removed, before the caller removes it.
  void remove(const std::string& path);
  // Records the mtime of the folder holding `path`, once the caller has added or removed it.
  void changed(const std::string& path);

  // The files of the dataset folder `dataset_dir`: path and bytes, by path.
  std::vector<CacheFile> files_of(const std::string& dataset_dir) const;

  // Calls `visit` with each file in least-recently-used order (by mtime, then path) until it
  // returns false; `visit` may remove the file it is given. A file found gone is removed.
  void by_last_use(const std::function<bool(const CacheFile& file)>& visit);

 private:
  struct Entry {
    uint64_t bytes = 0;
    int64_t last_use = 0;
  };
  std::string ledger_path() const { return dir_ + "/cache.ledger"; }
  std::string relative(const std::string& path) const;
  // Appends one line; on failure the file is removed (the next sync rebuilds it).
  void append(char op, const std::string& rel, const Entry& entry);
  // Applies the lines of `text`; false when one is torn or altered.
  bool apply(const std::string& text);
  void put(const std::string& rel, const Entry& entry);
  void erase(const std::string& rel);
  // Whether the last change agrees with the disk, and each shards/ folder's mtime.
  bool holds() const;
  Status write_whole();
  void clear();

  std::string dir_;
  std::string header_;                                // the file's first line, as read or written
  uint64_t offset_ = 0;                               // bytes of the file the copy holds
  uint64_t lines_ = 0;                                // change lines in the file
  std::map<std::string, Entry> entries_;              // by path relative to the cache
  std::set<std::pair<int64_t, std::string>> by_use_;  // (last use, path)
  std::map<std::string, int64_t> folders_;            // shards/ folder (relative) → its mtime
  uint64_t bytes_ = 0;
  char last_op_ = 0;  // the file's last change, to check against the disk
  std::string last_rel_;
  Entry last_entry_;
};

}  // namespace stoker
