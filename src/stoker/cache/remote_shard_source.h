#pragma once
// RemoteShardSource: a remote dataset's shards through the machine's shard cache
// (docs/REMOTE-DESIGN.md sections 1 and 3). acquire() pins a shard, downloading it first when
// the cache lacks it (a download failing verification is tried once more, then kCorrupt);
// downloader threads fetch ahead in the loader's order (advise, advance): the shard needed next
// first, within a horizon past the loader's lookahead that the measured bandwidth and pace set
// (prefetch_depth.h), and never displacing a shard needed sooner (the next-use rule). A shard
// is mapped only while pinned: its reader in readers() is valid while a pin of it is held. The
// source itself keeps a shard pinned and mapped while the loader's position lies in its use
// interval (the live shards, which the budget floor makes room for), so that batch after batch
// reuses one mapping; otherwise the last pin's release unmaps it (it stays cached).
//
// Thread-safe: acquire() from any thread; advise() and advance() from the loader's thread.
// The destructor stops and joins the downloaders (docs/DESIGN.md contract 9).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stoker/cache/prefetch_depth.h"
#include "stoker/cache/shard_cache.h"
#include "stoker/store/shard_source.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

// RemoteSourceOptions::downloaders: as many downloads at once as download_streams() says from
// the measured bandwidth and pace, 2 to max_streams; all of them while acquire() waits for a
// shard (the loader is starved now, which the smoothed pace shows only later).
inline constexpr int kTunedDownloaders = -1;

struct RemoteSourceOptions {
  EvictionPolicy policy = EvictionPolicy::kNextUse;
  // Threads fetching ahead: N fixed, kTunedDownloaders, or 0 (acquire() downloads on demand).
  int downloaders = kTunedDownloaders;
  // How far ahead they fetch, past the loader's lookahead, in average shards: shards first
  // needed beyond it wait, however much room the cache has. Fetching as far as the budget
  // allows keeps swapping shards that are all needed again (bench/remote/cache_simulation:
  // about 1.7x the downloads a bounded horizon makes). 0: tuned from the measured bandwidth
  // and the loader's pace (prefetch_depth.h); N: fixed.
  int prefetch_shards = 0;
  // The most downloads at once of tuned downloaders (open_dataset: streams_that_fit the cache).
  int max_streams = PrefetchInputs().max_streams;
};

class RemoteShardSource : public ShardSource,
                          public std::enable_shared_from_this<RemoteShardSource> {
 public:
  // `location` is the dataset's URL without credentials; `download` fetches a shard's bytes
  // (an ObjectStore in production).
  static std::shared_ptr<RemoteShardSource> create(Manifest manifest, std::string location,
                                                   DatasetCache cache, ShardDownload download,
                                                   RemoteSourceOptions options);
  ~RemoteShardSource() override;

  const Manifest& manifest() const override { return manifest_; }
  const std::string& location() const override { return location_; }
  // "URL (S shards, X GB; cache U/B GB)".
  std::string describe() const override;
  const std::vector<const ShardReader*>& readers() const override { return readers_; }
  bool needs_pins() const override { return true; }
  Result<ShardPin> acquire(int shard, const std::function<bool()>& cancelled) override;
  ShardSourceStats stats() const override;
  void advise(const ShardSchedule& schedule, int64_t lookahead) override;
  void advance(int64_t position) override;
  // acquire() each, and where one fails with kNoRoom (other pieces' pins, or shards needed
  // before these, fill the cache's budget), again once room may have been made, with no pin
  // held meanwhile so that the loader moves on and makes room. The failure stands when the
  // loader waits for these records (`awaited` true, or empty) and no other pin is held in the
  // process, or after kRoomWaitSeconds with no pin released and no move of the loader.
  static constexpr double kRoomWaitSeconds = 30;
  Result<ShardPins> acquire_all(const std::vector<int>& shards,
                                const std::function<bool()>& cancelled,
                                const std::function<bool()>& awaited) override;
  // acquire_all's steps, public for a test that takes them one at a time:
  // The count of pins released and moves of the loader so far.
  uint64_t room_changes() const STOKER_EXCLUDES(mutex_);
  // For a caller whose acquire() failed with kNoRoom and who then let go of all its pins: a
  // wait of at most a moment for the next room change after `since`. When the loader waits for
  // the caller (`awaited`) and no pin is held here, it takes turns with the cache's other users
  // (wait_for_peers); false, at once, when it is alone and nothing changed (the failure
  // stands); true otherwise: try again.
  bool wait_for_room(uint64_t since, bool awaited) STOKER_EXCLUDES(mutex_);

 private:
  RemoteShardSource(Manifest manifest, std::string location, DatasetCache cache,
                    ShardDownload download, RemoteSourceOptions options);
  EvictionAdvice advice() const STOKER_EXCLUDES(mutex_);
  // The shard the downloaders fetch next (not cached, not being fetched, needed soonest), or -1.
  int next_to_fetch() const STOKER_REQUIRES(mutex_);
  int prefetch_shards() const STOKER_REQUIRES(mutex_);
  // How many of the downloader threads fetch now (the others wait).
  int active_downloaders() const STOKER_REQUIRES(mutex_);
  // The measured bandwidth and pace, for prefetch_depth.h.
  PrefetchInputs measured() const STOKER_REQUIRES(mutex_);
  // Downloader thread `index`'s loop.
  void download_ahead(int index) STOKER_EXCLUDES(mutex_);

  // Whether the loader's position lies in `shard`'s use interval.
  bool live(int shard) const STOKER_REQUIRES(mutex_);
  // Lets go of the kept mappings of the shards no longer live.
  void release_dead_shards() STOKER_EXCLUDES(mutex_);
  // Lets go of every kept mapping not being pinned now; whether it let go of any.
  bool release_kept_shards() STOKER_EXCLUDES(mutex_);
  // wait_for_room() where nothing of this process will make room (see there).
  bool wait_for_peers() STOKER_EXCLUDES(mutex_);
  // Counts a change that may make room in the cache (a pin or mapping let go, a move of the
  // loader) and wakes wait_for_room().
  void room_changed(int pins_released) STOKER_EXCLUDES(mutex_);

  // Serialises acquire() per shard, so that a shard is fetched and mapped once.
  struct Slot {
    std::mutex mutex;
    std::weak_ptr<CachedShard> held;
    std::shared_ptr<CachedShard> kept;  // while live (see above); not a pin's holder: no cycle
    bool releasing = false;             // a pin made by acquire() whose release has not run
  };

  const Manifest manifest_;
  const uint64_t bytes_;  // the shards' sum
  const std::string location_;
  const DatasetCache cache_;
  const ShardDownload download_;  // counts the bytes it fetched
  const RemoteSourceOptions options_;
  std::vector<const ShardReader*> readers_;  // entry s set while s is pinned (see above)
  std::vector<Slot> slots_;
  std::atomic<uint64_t> fetched_bytes_{0};
  std::atomic<int> downloads_{0};       // running now
  std::atomic<int> most_downloads_{0};  // the most at once
  std::atomic<int64_t> wait_ns_{0};

  // Held by a downloader from choosing its shard until the cache has made room for it, so
  // that shards are admitted in the order chosen (needed soonest first), not in whichever
  // order concurrent admissions happen to reach the cache.
  std::mutex admission_;
  mutable Mutex mutex_;
  std::condition_variable wake_;  // a new plan or position, a fetch ended, or stop
  std::condition_variable room_;  // room_changes_ moved on
  uint64_t room_changes_ STOKER_GUARDED_BY(mutex_) = 0;
  uint64_t peers_digest_ STOKER_GUARDED_BY(mutex_) = 0;  // the cache's contents, last seen
  int pinned_ STOKER_GUARDED_BY(mutex_) = 0;             // shards with a pin held now
  int starved_ STOKER_GUARDED_BY(mutex_) = 0;  // acquire() calls waiting for a download now
  ShardSchedule schedule_ STOKER_GUARDED_BY(mutex_);
  bool advised_ STOKER_GUARDED_BY(mutex_) = false;
  int64_t lookahead_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t position_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t blocked_at_ STOKER_GUARDED_BY(mutex_) = -1;  // the cache had no room at this position
  PrefetchMeter meter_ STOKER_GUARDED_BY(mutex_);      // bytes/s of one download, records/s
  std::vector<bool> in_flight_ STOKER_GUARDED_BY(mutex_);
  std::vector<int> kept_ STOKER_GUARDED_BY(mutex_);  // shards whose slot may keep a mapping
  bool stop_ STOKER_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> downloaders_;
};

}  // namespace stoker
