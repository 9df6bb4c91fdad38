#include "stoker/cache/remote_shard_source.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <thread>

namespace stoker {

std::shared_ptr<RemoteShardSource> RemoteShardSource::create(Manifest manifest,
                                                             std::string location,
                                                             DatasetCache cache,
                                                             ShardDownload download,
                                                             RemoteSourceOptions options) {
  std::shared_ptr<RemoteShardSource> source(new RemoteShardSource(
      std::move(manifest), std::move(location), std::move(cache), std::move(download), options));
  const int threads =
      options.downloaders == kTunedDownloaders ? options.max_streams : options.downloaders;
  for (int t = 0; t < threads; ++t)
    source->downloaders_.emplace_back([raw = source.get(), t] { raw->download_ahead(t); });
  return source;
}

RemoteShardSource::RemoteShardSource(Manifest manifest, std::string location, DatasetCache cache,
                                     ShardDownload download, RemoteSourceOptions options)
    : manifest_(std::move(manifest)),
      bytes_(std::accumulate(manifest_.shards.begin(), manifest_.shards.end(), uint64_t{0},
                             [](uint64_t sum, const ShardInfo& s) { return sum + s.bytes; })),
      location_(std::move(location)),
      cache_(std::move(cache)),
      download_([this, inner = std::move(download)](const ShardInfo& info, int fd,
                                                    const std::function<bool()>& cancelled) {
        const int64_t start = steady_now_ns();
        const int running = ++downloads_;
        for (int most = most_downloads_.load(); running > most;) {
          if (most_downloads_.compare_exchange_weak(most, running)) break;
        }
        Status status = inner(info, fd, cancelled);
        --downloads_;
        if (status.is_ok()) {
          fetched_bytes_ += info.bytes;
          MutexLock lock(mutex_);
          meter_.downloaded(static_cast<double>(info.bytes), (steady_now_ns() - start) / 1e9);
        }
        return status;
      }),
      options_(options),
      readers_(manifest_.shards.size(), nullptr),
      slots_(manifest_.shards.size()),
      in_flight_(manifest_.shards.size(), false) {}

RemoteShardSource::~RemoteShardSource() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : downloaders_) t.join();
}

std::string RemoteShardSource::describe() const {
  const ShardCacheUsage usage = cache_.cache().usage();
  return fmt::format("{} ({} shards, {:.1f} GB; cache {:.1f}/{:.1f} GB in {})", location_,
                     manifest_.shards.size(), bytes_ / 1e9, usage.bytes / 1e9,
                     cache_.cache().budget_bytes() / 1e9, cache_.cache().dir());
}

EvictionAdvice RemoteShardSource::advice() const {
  EvictionAdvice advice;
  advice.policy = options_.policy;
  MutexLock lock(mutex_);
  if (!advised_) return advice;  // no plan yet: every shard alike
  advice.next_use = [schedule = schedule_, position = position_](int shard) {
    return schedule.next_use(shard, position);
  };
  advice.needed_soon_before = position_ + lookahead_;
  return advice;
}

Result<ShardPin> RemoteShardSource::acquire(int shard, const std::function<bool()>& cancelled) {
  Slot& slot = slots_[shard];
  std::unique_lock<std::mutex> lock(slot.mutex);
  if (std::shared_ptr<CachedShard> held = slot.held.lock()) return ShardPin(shard, held);
  // The last pin is gone but its release has not run yet: wait for it, so that the reads made
  // under that pin happen before this one's writes (slot.mutex orders them; a failed
  // weak_ptr::lock does not), and so that the release clears the old reader, not a new one's.
  while (slot.releasing) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  std::shared_ptr<CachedShard> cached = slot.kept;
  if (!cached) {
    // Needed now: what the lookahead protects for later gives way to it, as the next-use rule
    // says, so that a cache smaller than the lookahead's shards still moves on; only the shards
    // in use or needed no later than this one stay.
    EvictionAdvice now = advice();
    if (now.next_use)
      now.needed_soon_before = std::min(now.needed_soon_before, now.next_use(shard) + 1);
    const int64_t start = steady_now_ns();
    {
      MutexLock state(mutex_);
      in_flight_[shard] = true;  // the downloaders fetch others meanwhile
      ++starved_;
    }
    wake_.notify_all();  // more downloaders now
    Result<CachedShard> fetched = cache_.fetch(shard, download_, now, cancelled);
    // Bytes that fail verification (damaged on the way, or the object changed mid-transfer: a
    // 412) are fetched once more; a shard that fails again has changed on the server.
    if (fetched.status().code() == StatusCode::kCorrupt)
      fetched = cache_.fetch(shard, download_, now, cancelled);
    {
      MutexLock state(mutex_);
      in_flight_[shard] = false;
      --starved_;
    }
    wake_.notify_all();
    wait_ns_ += steady_now_ns() - start;
    if (!fetched.is_ok()) return fetched.status();
    cached = std::make_shared<CachedShard>(std::move(fetched).value());
  }
  if (!slot.kept) {
    MutexLock state(mutex_);
    if (live(shard)) {
      slot.kept = cached;
      kept_.push_back(shard);
    }
  }
  readers_[shard] = &cached->reader();
  // The last pin's release clears the shard's reader and unmaps it (unless kept); no new pin of
  // the shard is made until it has run (above). The pin keeps the source alive.
  std::shared_ptr<CachedShard> hold(
      cached.get(), [self = shared_from_this(), cached, shard](CachedShard*) mutable {
        // The captures go now, not with the control block that slot.held's weak_ptr keeps:
        // that would keep the source alive through its own slot (a cycle).
        const std::shared_ptr<RemoteShardSource> source = std::move(self);
        std::shared_ptr<CachedShard> mapped = std::move(cached);
        {
          std::lock_guard<std::mutex> relock(source->slots_[shard].mutex);
          source->readers_[shard] = nullptr;
          source->slots_[shard].releasing = false;
        }
        mapped.reset();  // unpinned in the cache too, unless kept
        source->room_changed(1);
      });
  slot.held = hold;
  slot.releasing = true;  // from its last pin's end to the release's run
  {
    MutexLock state(mutex_);
    ++pinned_;
  }
  return ShardPin(shard, std::move(hold));
}

void RemoteShardSource::room_changed(int pins_released) {
  {
    MutexLock lock(mutex_);
    pinned_ -= pins_released;
    ++room_changes_;
  }
  room_.notify_all();
}

Result<ShardPins> RemoteShardSource::acquire_all(const std::vector<int>& shards,
                                                 const std::function<bool()>& cancelled,
                                                 const std::function<bool()>& awaited) {
  using Clock = std::chrono::steady_clock;
  const auto patience =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kRoomWaitSeconds));
  Clock::time_point give_up_at = Clock::now() + patience;
  bool last_try = false;
  while (true) {
    ShardPins pins;
    pins.reserve(shards.size());
    Status failed;
    for (int s : shards) {
      Result<ShardPin> pin = acquire(s, cancelled);
      if (!pin.is_ok()) {
        failed = pin.status();
        break;
      }
      pins.push_back(std::move(pin).value());
    }
    if (failed.is_ok()) return pins;
    if (failed.code() != StatusCode::kNoRoom) return failed;
    pins.clear();  // held while waiting, they could be the room another piece waits for
    if (last_try || Clock::now() >= give_up_at) return failed;
    // Counted after this piece's own releases: what changes next is others' doing.
    const uint64_t changes = room_changes();
    if (!wait_for_room(changes, !awaited || awaited())) last_try = true;
    if (cancelled && cancelled()) return Status(StatusCode::kCancelled, "cancelled");
    if (room_changes() != changes) give_up_at = Clock::now() + patience;  // moving on
  }
}

uint64_t RemoteShardSource::room_changes() const {
  MutexLock lock(mutex_);
  return room_changes_;
}

bool RemoteShardSource::wait_for_room(uint64_t since, bool awaited) {
  MutexLock lock(mutex_);
  if (room_changes_ != since) return true;
  if (awaited && pinned_ == 0) {
    lock.unlock();
    return wait_for_peers();
  }
  // A moment at most: another process's pins are not signalled here.
  lock.wait_until(room_, std::chrono::steady_clock::now() + std::chrono::milliseconds(100),
                  [&]() STOKER_REQUIRES(mutex_) { return room_changes_ != since || stop_; });
  return true;
}

bool RemoteShardSource::wait_for_peers() {
  // The loader waits for this caller and no other piece holds a pin: nothing of this process
  // will make room. It takes turns with the other users of the cache (other ranks, other
  // loaders): it lets go of its kept shards (which a peer may then evict: fetched again when
  // needed) and waits for a peer to move on; a peer waiting likewise holds no pins, so one of
  // them always finds room. Alone, the failure stands.
  if (release_kept_shards()) {
    room_changed(0);
    return true;
  }
  const ShardCache& cache = cache_.cache();
  if (cache.other_users() == 0) return false;
  // A moment, a little different each time, so that waiting peers do not retry in step.
  thread_local std::minstd_rand jitter(std::random_device{}());
  const auto moment = std::chrono::milliseconds(50 + jitter() % 100);
  {
    MutexLock lock(mutex_);
    lock.wait_until(room_, std::chrono::steady_clock::now() + moment,
                    [&]() STOKER_REQUIRES(mutex_) { return stop_; });
  }
  // What the peers download or evict is their moving on: it renews the caller's patience.
  const uint64_t digest = cache.contents_digest();
  bool moved;
  {
    MutexLock lock(mutex_);
    moved = digest != peers_digest_;
    peers_digest_ = digest;
  }
  if (moved) room_changed(0);
  return true;
}

bool RemoteShardSource::release_kept_shards() {
  std::vector<int> kept;
  {
    MutexLock lock(mutex_);
    kept = kept_;
  }
  bool released = false;
  // Slot before state, the order acquire() takes them; unmapped outside both.
  for (int shard : kept) {
    std::shared_ptr<CachedShard> unmapped;
    std::unique_lock<std::mutex> slot_lock(slots_[shard].mutex, std::try_to_lock);
    if (!slot_lock.owns_lock()) continue;  // being pinned now
    MutexLock lock(mutex_);
    const auto at = std::find(kept_.begin(), kept_.end(), shard);
    if (at == kept_.end()) continue;
    kept_.erase(at);
    unmapped = std::move(slots_[shard].kept);
    released = released || unmapped != nullptr;
  }
  return released;
}

ShardSourceStats RemoteShardSource::stats() const {
  ShardSourceStats stats;
  stats.fetched_bytes = fetched_bytes_.load();
  stats.wait_ns = wait_ns_.load();
  MutexLock lock(mutex_);
  stats.download_bytes_per_s = meter_.bytes_per_s();
  stats.records_per_s = meter_.pace();
  stats.prefetch_shards = prefetch_shards();
  stats.download_streams = active_downloaders();
  stats.most_downloads = most_downloads_.load();
  return stats;
}

bool RemoteShardSource::live(int shard) const {
  if (!advised_) return false;
  const ShardUse& use = schedule_.now[shard];
  return use.first != ShardUse::kUnused && use.first <= position_ && position_ <= use.last;
}

void RemoteShardSource::release_dead_shards() {
  std::vector<int> candidates;
  {
    MutexLock lock(mutex_);
    auto dead = std::stable_partition(kept_.begin(), kept_.end(),
                                      [&](int s) STOKER_REQUIRES(mutex_) { return live(s); });
    candidates.assign(dead, kept_.end());
    kept_.erase(dead, kept_.end());
  }
  // Slot before state, the order acquire() takes them; unmapped outside both.
  for (int shard : candidates) {
    std::shared_ptr<CachedShard> unmapped;
    std::lock_guard<std::mutex> slot_lock(slots_[shard].mutex);
    MutexLock lock(mutex_);
    if (live(shard)) {
      kept_.push_back(shard);  // live again meanwhile (a new epoch)
      continue;
    }
    unmapped = std::move(slots_[shard].kept);
  }
}

void RemoteShardSource::advise(const ShardSchedule& schedule, int64_t lookahead) {
  {
    MutexLock lock(mutex_);
    schedule_ = schedule;
    advised_ = true;
    lookahead_ = lookahead;
    position_ = 0;
    blocked_at_ = -1;
    meter_.restart(0, steady_now_ns());
  }
  release_dead_shards();
  wake_.notify_all();
}

void RemoteShardSource::advance(int64_t position) {
  {
    MutexLock lock(mutex_);
    if (position == position_) return;
    position_ = position;
    meter_.moved(position, steady_now_ns());
  }
  release_dead_shards();
  wake_.notify_all();
  room_changed(0);  // shards no longer needed soon may be evicted
}

PrefetchInputs RemoteShardSource::measured() const {
  const double shards = static_cast<double>(std::max<size_t>(manifest_.shards.size(), 1));
  return meter_.inputs(static_cast<double>(bytes_) / shards,
                       static_cast<double>(manifest_.records) / shards, options_.max_streams);
}

int RemoteShardSource::prefetch_shards() const {
  if (options_.prefetch_shards > 0) return options_.prefetch_shards;
  // At least a shard for each download running.
  return std::max(prefetch_depth(measured()), active_downloaders());
}

int RemoteShardSource::active_downloaders() const {
  if (options_.downloaders != kTunedDownloaders) return options_.downloaders;
  const PrefetchInputs in = measured();
  return starved_ > 0 ? in.max_streams : download_streams(in);
}

int RemoteShardSource::next_to_fetch() const {
  if (!advised_ || blocked_at_ == position_) return -1;
  const int64_t mean_records =
      static_cast<int64_t>(manifest_.records / std::max<size_t>(manifest_.shards.size(), 1));
  int best = -1;
  int64_t best_use = position_ + lookahead_ + prefetch_shards() * mean_records;
  for (size_t s = 0; s < manifest_.shards.size(); ++s) {
    const int64_t use = schedule_.next_use(static_cast<int>(s), position_);
    if (use >= best_use || in_flight_[s] || cache_.holds(static_cast<int>(s))) continue;
    best = static_cast<int>(s);
    best_use = use;
  }
  return best;
}

void RemoteShardSource::download_ahead(int index) {
  while (true) {
    {
      // An idle thread waits here, not holding admission_ (the active ones need it).
      MutexLock lock(mutex_);
      lock.wait(wake_,
                [&]() STOKER_REQUIRES(mutex_) { return stop_ || index < active_downloaders(); });
      if (stop_) return;
    }
    std::unique_lock<std::mutex> admitting(admission_);
    MutexLock lock(mutex_);
    int shard = -1;
    lock.wait(wake_, [&]() STOKER_REQUIRES(mutex_) {
      return stop_ || index >= active_downloaders() || (shard = next_to_fetch()) >= 0;
    });
    if (stop_) return;
    if (shard < 0) continue;  // no longer active
    in_flight_[shard] = true;
    const int64_t position = position_;
    lock.unlock();
    // Fetched into the cache and let go at once: it waits there, unpinned, kept from eviction
    // by its next use.
    const auto stopping = [this] {
      MutexLock stop_lock(mutex_);
      return stop_;
    };
    const Status fetched =
        cache_.fetch(shard, download_, advice(), stopping, [&] { admitting.unlock(); }).status();
    if (admitting.owns_lock()) admitting.unlock();
    lock.lock();
    in_flight_[shard] = false;
    // No room (or a failure, which acquire() reports when the shard is needed): nothing more
    // until the loader moves on.
    if (!fetched.is_ok()) blocked_at_ = position;
    wake_.notify_all();
  }
}

}  // namespace stoker
