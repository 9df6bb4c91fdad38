#pragma once
// SlowShardSource: a dataset directory's shards (LocalShardSource) served the way a remote
// dataset's are, for the tests of the shard source seam: acquire() first waits a set time (a
// fetch, asking its `cancelled` every millisecond), can fail a chosen shard, and a shard's reader
// is there only while a pin holds it (readers() has null for an unpinned shard, so a record read
// without its pin dereferences null). Counts its acquires, cancellations and live pins, and
// keeps the loader's last advice (schedule, lookahead, position). Thread-safe.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stoker/store/local_shard_source.h"
#include "stoker/util/thread_annotations.h"

namespace stoker::testing {

class SlowShardSource : public ShardSource, public std::enable_shared_from_this<SlowShardSource> {
 public:
  static constexpr int kNone = -1;

  // The shards of `dir`; each acquire() waits `delay` first; shard `failing` fails to fetch.
  static std::shared_ptr<SlowShardSource> open(const std::string& dir,
                                               std::chrono::nanoseconds delay,
                                               int failing = kNone) {
    std::shared_ptr<SlowShardSource> source(
        new SlowShardSource(LocalShardSource::open(dir).value_or_throw(), delay, failing));
    return source;
  }
  // The message a fetch of `shard` fails with: its file, then why.
  std::string failure(int shard) const {
    return fmt::format("{}/{}: fetch failed (SlowShardSource)", location(),
                       manifest().shards[shard].file);
  }

  const Manifest& manifest() const override { return local_->manifest(); }
  const std::string& location() const override { return local_->location(); }
  std::string describe() const override { return "slow " + local_->describe(); }
  const std::vector<const ShardReader*>& readers() const override { return readers_; }
  bool needs_pins() const override { return true; }
  ShardSourceStats stats() const override {
    ShardSourceStats stats;
    stats.wait_ns = wait_ns_.load(std::memory_order_relaxed);
    return stats;
  }

  Result<ShardPin> acquire(int shard, const std::function<bool()>& cancelled) override {
    using std::chrono::steady_clock;
    const steady_clock::time_point start = steady_clock::now();
    const steady_clock::time_point ready = start + delay_.load();
    acquires_.fetch_add(1);
    for (steady_clock::time_point now = start; now < ready; now = steady_clock::now()) {
      if (cancelled && cancelled()) {
        cancellations_.fetch_add(1);
        return Status(StatusCode::kCancelled, failure(shard) + " (cancelled)");
      }
      std::this_thread::sleep_for(
          std::min<steady_clock::duration>(ready - now, std::chrono::milliseconds(1)));
    }
    wait_ns_.fetch_add((steady_clock::now() - start).count());
    if (shard == failing_) return io_error(failure(shard));
    {
      MutexLock lock(mutex_);
      if (pins_[shard]++ == 0) readers_[shard] = local_->readers()[shard];
    }
    live_pins_.fetch_add(1);
    // The pin's hold unpins the shard when the pin goes (the source outlives it: it is held).
    std::shared_ptr<SlowShardSource> self = shared_from_this();
    return ShardPin(shard,
                    std::shared_ptr<void>(nullptr, [self, shard](void*) { self->unpin(shard); }));
  }

  void advise(const ShardSchedule& schedule, int64_t lookahead) override {
    MutexLock lock(mutex_);
    schedule_ = schedule;
    lookahead_ = lookahead;
  }
  void advance(int64_t position) override { position_ = position; }
  ShardSchedule schedule() const {
    MutexLock lock(mutex_);
    return schedule_;
  }
  int64_t lookahead() const {
    MutexLock lock(mutex_);
    return lookahead_;
  }
  int64_t position() const { return position_.load(); }

  // From now on acquire() waits `delay` (a wait already begun keeps its own).
  void set_delay(std::chrono::nanoseconds delay) { delay_ = delay; }
  int64_t acquires() const { return acquires_.load(); }
  int64_t cancellations() const { return cancellations_.load(); }
  int64_t live_pins() const { return live_pins_.load(); }

 private:
  SlowShardSource(std::shared_ptr<LocalShardSource> local, std::chrono::nanoseconds delay,
                  int failing)
      : local_(std::move(local)),
        failing_(failing),
        delay_(delay),
        readers_(local_->readers().size(), nullptr),
        pins_(local_->readers().size(), 0) {}

  void unpin(int shard) {
    live_pins_.fetch_sub(1);
    MutexLock lock(mutex_);
    if (--pins_[shard] == 0) readers_[shard] = nullptr;
  }

  const std::shared_ptr<LocalShardSource> local_;
  const int failing_;
  std::atomic<std::chrono::nanoseconds> delay_;
  std::atomic<int64_t> acquires_{0};
  std::atomic<int64_t> cancellations_{0};
  std::atomic<int64_t> live_pins_{0};
  std::atomic<int64_t> wait_ns_{0};
  std::atomic<int64_t> position_{0};
  mutable Mutex mutex_;
  // An entry is written under mutex_ and read by a pin's holder (ordered by the acquire).
  std::vector<const ShardReader*> readers_;
  std::vector<int> pins_ STOKER_GUARDED_BY(mutex_);
  ShardSchedule schedule_ STOKER_GUARDED_BY(mutex_);
  int64_t lookahead_ STOKER_GUARDED_BY(mutex_) = 0;
};

}  // namespace stoker::testing
