#include "stoker/cache/remote_shard_source.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "stoker/store/dataset.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/file_lock.h"

namespace stoker {
namespace {

// A local dataset standing for the remote one; downloads copy its shards and are logged.
struct Fixture {
  testing::TempDir dir;
  Manifest manifest;
  std::mutex mutex;
  std::vector<int> downloaded;  // shard indices, in download order
  int damaged = 0;              // the next downloads to damage (a byte inverted); -1: all

  explicit Fixture(int records = 600) {  // in shards of 50
    testing::write_labelled_dataset(dir.path() + "/ds", records, 10, 2048);
    manifest = Manifest::load(dir.path() + "/ds").value_or_throw();
  }

  int download_ms = 0;                   // each download's added delay
  std::function<void(int)> on_download;  // +1 as each download starts, -1 as it ends

  std::shared_ptr<RemoteShardSource> source(uint64_t budget, int downloaders,
                                            EvictionPolicy policy = EvictionPolicy::kNextUse,
                                            int prefetch_shards = 0) {
    auto cache = ShardCache::open(dir.path() + "/cache", budget).value_or_throw();
    DatasetCache ds = cache->dataset("0c", "s3://b/ds", manifest).value_or_throw();
    ShardDownload download = [this](const ShardInfo& info, int fd, const std::function<bool()>&) {
      std::string bytes = read_file(dir.path() + "/ds/" + info.file).value();
      {
        std::lock_guard<std::mutex> lock(mutex);
        for (size_t s = 0; s < manifest.shards.size(); ++s)
          if (manifest.shards[s].file == info.file) downloaded.push_back(static_cast<int>(s));
        if (damaged != 0) {
          bytes[bytes.size() / 2] ^= 0xFF;
          if (damaged > 0) --damaged;
        }
      }
      if (on_download) on_download(+1);
      std::this_thread::sleep_for(std::chrono::milliseconds(download_ms));
      if (on_download) on_download(-1);
      return ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())
                 ? Status::ok()
                 : io_error("pwrite failed");
    };
    RemoteSourceOptions options;
    options.downloaders = downloaders;
    options.policy = policy;
    options.prefetch_shards = prefetch_shards;
    options.max_streams = max_streams;
    return RemoteShardSource::create(manifest, "s3://b/ds", std::move(ds), download, options);
  }

  int max_streams = PrefetchInputs().max_streams;  // of tuned downloaders

  std::vector<int> downloads() {
    std::lock_guard<std::mutex> lock(mutex);
    return downloaded;
  }

  uint64_t bytes_of(std::initializer_list<int> shards) const {
    uint64_t total = 0;
    for (int s : shards) total += manifest.shards[s].bytes;
    return total;
  }
};

// An epoch that reads whole shards one after another in `order`, and the same in the next.
ShardSchedule in_turn(const Manifest& m, const std::vector<int>& order) {
  ShardSchedule schedule;
  schedule.now.resize(m.shards.size());
  int64_t at = 0;
  for (int s : order) {
    schedule.now[s] = {at, at + static_cast<int64_t>(m.shards[s].records) - 1};
    at += static_cast<int64_t>(m.shards[s].records);
  }
  schedule.after = schedule.now;
  schedule.epoch_size = at;
  return schedule;
}

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Whether `done` comes true. The bound only ends a test that would hang: a machine under load
// (sanitizers, fsyncs behind other tests' writes) may take seconds for what takes milliseconds.
template <typename Done>
bool eventually(Done done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!done() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

TEST(RemoteShardSourceTest, AShardIsMappedWhilePinnedAndStaysCachedAfter) {
  Fixture f;
  auto source = f.source(uint64_t{1} << 30, /*downloaders=*/0);
  EXPECT_TRUE(source->needs_pins());
  EXPECT_EQ(source->readers()[2], nullptr);
  {
    ShardPin pin = source->acquire(2, nullptr).value_or_throw();
    ShardPin again = source->acquire(2, nullptr).value_or_throw();
    ASSERT_NE(source->readers()[2], nullptr);
    EXPECT_EQ(source->readers()[2]->records(), f.manifest.shards[2].records);
  }
  EXPECT_EQ(source->readers()[2], nullptr) << "unmapped with its last pin";
  ShardPin back = source->acquire(2, nullptr).value_or_throw();
  EXPECT_EQ(f.downloads(), std::vector<int>{2}) << "downloaded once, then found in the cache";
  EXPECT_EQ(source->stats().fetched_bytes, f.manifest.shards[2].bytes);
  EXPECT_NE(
      source->describe().find("s3://b/ds (" + std::to_string(f.manifest.shards.size()) + " shards"),
      std::string::npos)
      << source->describe();
}

TEST(RemoteShardSourceTest, ADatasetOverItReadsTheSameRecordsAsTheLocalOne) {
  Fixture f;
  auto local = Dataset::open(f.dir.path() + "/ds").value_or_throw();
  auto remote = Dataset::open(f.source(uint64_t{1} << 30, 0)).value_or_throw();
  ASSERT_EQ(remote->size(), local->size());
  for (int64_t i = static_cast<int64_t>(local->size()) - 1; i >= 0; i -= 7) {
    ShardPins pins = remote->pin(&i, 1, nullptr).value_or_throw();
    ByteSpan want = local->record(static_cast<uint64_t>(i));
    ByteSpan got = remote->record(static_cast<uint64_t>(i));
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(got.data), got.size),
              std::string(reinterpret_cast<const char*>(want.data), want.size))
        << "record " << i;
  }
}

TEST(RemoteShardSourceTest, DownloadersFetchAheadInTheLoadersOrderWithinTheHorizon) {
  Fixture f;
  auto source = f.source(uint64_t{1} << 30, /*downloaders=*/1, EvictionPolicy::kNextUse,
                         /*prefetch_shards=*/4);
  std::vector<int> order;
  for (int s = static_cast<int>(f.manifest.shards.size()) - 1; s >= 0; --s) order.push_back(s);
  std::swap(order[0], order[3]);
  const ShardSchedule schedule = in_turn(f.manifest, order);
  // The horizon: 4 average shards past a lookahead of one shard.
  const int64_t shard = static_cast<int64_t>(f.manifest.shards[0].records);
  const int64_t horizon =
      shard + 4 * static_cast<int64_t>(f.manifest.records / f.manifest.shards.size());
  size_t within = 0;
  while (within < order.size() && schedule.now[order[within]].first < horizon) ++within;
  ASSERT_GE(within, 4u);
  ASSERT_LT(within, order.size());
  source->advise(schedule, shard);
  ASSERT_TRUE(eventually([&] { return f.downloads().size() == within; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(f.downloads(), std::vector<int>(order.begin(), order.begin() + within))
      << "no further, however much room the cache has";
  // The loader moves on: each shard is fetched once its first use comes within the horizon.
  for (int64_t p = shard / 2; p < schedule.epoch_size; p += shard / 2) {
    source->advance(p);
    while (within < order.size() && schedule.now[order[within]].first < p + horizon) ++within;
    ASSERT_TRUE(eventually([&] { return f.downloads().size() == within; })) << p;
  }
  EXPECT_EQ(f.downloads(), order);
}

TEST(RemoteShardSourceTest, TheBudgetBoundsHowFarAheadAndNothingIsFetchedTwice) {
  Fixture f;
  // Room for two shards: the downloaders fetch the first two of the order, then wait.
  auto source = f.source(f.bytes_of({0, 1}), /*downloaders=*/2);
  const std::vector<int> order = {4, 0, 3, 1, 2};
  ShardSchedule schedule = in_turn(f.manifest, order);
  source->advise(schedule, 0);
  ASSERT_TRUE(eventually([&] { return f.downloads().size() == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Two downloaders: admitted in order, their transfers may log in either.
  EXPECT_EQ(sorted(f.downloads()), (std::vector<int>{0, 4}));
  // Past shard 4's last use its next is in the next epoch: it makes room for 3.
  source->advance(schedule.now[4].last + 1);
  ASSERT_TRUE(eventually([&] { return f.downloads().size() == 3; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(sorted(f.downloads()), (std::vector<int>{0, 3, 4}));
}

TEST(RemoteShardSourceTest, TheDepthFollowsTheMeasuredBandwidthAndPace) {
  Fixture f;
  f.download_ms = 100;
  auto source = f.source(uint64_t{1} << 30, /*downloaders=*/1);
  std::vector<int> order(f.manifest.shards.size());
  for (size_t s = 0; s < order.size(); ++s) order[s] = static_cast<int>(s);
  const ShardSchedule schedule = in_turn(f.manifest, order);
  EXPECT_EQ(source->stats().prefetch_shards, 4) << "unmeasured";
  source->advise(schedule, 0);
  // A loader that reads a shard in 10 ms or more, against downloads of 100 ms or more.
  const int64_t shard = static_cast<int64_t>(f.manifest.shards[0].records);
  for (int64_t p = 0; p < schedule.epoch_size; p += shard) {
    source->advance(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(eventually([&] { return source->stats().download_bytes_per_s > 0; }));
  const ShardSourceStats stats = source->stats();
  uint64_t bytes = 0, largest = 0;
  for (const ShardInfo& info : f.manifest.shards) {
    bytes += info.bytes;
    largest = std::max(largest, info.bytes);
  }
  EXPECT_LE(stats.download_bytes_per_s, largest / 0.1) << "no faster than the delay allows";
  EXPECT_GT(stats.records_per_s, 0);
  EXPECT_LE(stats.records_per_s, shard / 0.01);
  PrefetchInputs in;  // the mean shard, as the source's
  const double shards = static_cast<double>(f.manifest.shards.size());
  in.shard_bytes = static_cast<double>(bytes) / shards;
  in.shard_records = static_cast<double>(f.manifest.records) / shards;
  in.stream_bytes_per_s = stats.download_bytes_per_s;
  in.records_per_s = stats.records_per_s;
  EXPECT_EQ(stats.prefetch_shards, prefetch_depth(in));
}

// Downloads slower than the loader reads: tuned, more of them run at once than the 2 a fixed
// setting keeps to (the loader reads each shard as soon as it is there).
TEST(RemoteShardSourceTest, TunedDownloadsGrowWhileTheLoaderOutpacesThem) {
  const auto most_at_once = [](int downloaders, int max_streams = 8) {
    Fixture f(4800);
    f.download_ms = 40;
    f.max_streams = max_streams;
    std::mutex mutex;
    int now = 0, most = 0;
    f.on_download = [&](int delta) {
      std::lock_guard<std::mutex> lock(mutex);
      now += delta;
      most = std::max(most, now);
    };
    auto source = f.source(uint64_t{1} << 30, downloaders);
    std::vector<int> order(f.manifest.shards.size());
    for (size_t s = 0; s < order.size(); ++s) order[s] = static_cast<int>(s);
    const ShardSchedule schedule = in_turn(f.manifest, order);
    source->advise(schedule, 0);
    int64_t position = 0;
    for (int s : order) {
      ShardPin pin = source->acquire(s, nullptr).value_or_throw();
      position += static_cast<int64_t>(f.manifest.shards[s].records);
      source->advance(position);
    }
    const ShardSourceStats stats = source->stats();
    std::lock_guard<std::mutex> lock(mutex);
    // The source counts its downloads a moment longer than the fixture: at least as many.
    EXPECT_GE(stats.most_downloads, most) << downloaders;
    return std::pair(most, stats);
  };
  const auto [fixed, fixed_stats] = most_at_once(2);
  EXPECT_LE(fixed, 3) << "2 downloaders and the shard acquire() waits for";
  EXPECT_LE(fixed_stats.most_downloads, 3);
  EXPECT_EQ(fixed_stats.download_streams, 2);
  const auto [tuned, tuned_stats] = most_at_once(kTunedDownloaders);
  EXPECT_GE(tuned, 5);
  EXPECT_GT(tuned_stats.download_streams, 2);
  // A cache with room for 2 downloads beside the floor: never more, starved or not.
  const auto [capped, capped_stats] = most_at_once(kTunedDownloaders, 2);
  EXPECT_LE(capped, 3) << "2 downloaders and the shard acquire() waits for";
  EXPECT_LE(capped_stats.download_streams, 2);
}

// The lookahead protects shards for the next batches; a shard needed now (acquire) may still
// displace those needed later than itself, so a cache smaller than the lookahead moves on.
TEST(RemoteShardSourceTest, AShardNeededNowDisplacesShardsTheLookaheadKeepsForLater) {
  Fixture f;
  const std::vector<int> order = {3, 1, 4, 0, 2};
  auto source = f.source(f.bytes_of({1, 3}) + f.manifest.shards[4].bytes / 2, /*downloaders=*/0);
  const ShardSchedule schedule = in_turn(f.manifest, order);
  source->advise(schedule, 2 * schedule.epoch_size);  // every shard "needed soon"
  for (int s : order) {
    source->advance(schedule.now[s].first);
    ASSERT_TRUE(source->acquire(s, nullptr).is_ok()) << "shard " << s;
  }
  EXPECT_EQ(f.downloads(), order);
}

// Batch after batch pins the live shards: one mapping serves them all, until the loader's
// position leaves the shard's interval. Seen from outside as its cache file's shared flock (a
// mapped shard is a pinned one: another process cannot evict it).
TEST(RemoteShardSourceTest, ALiveShardStaysMappedBetweenPinsUntilItsIntervalEnds) {
  Fixture f;
  auto source = f.source(uint64_t{1} << 30, /*downloaders=*/0);
  const auto pinned = [&](int shard) {
    for (const auto& entry :
         std::filesystem::directory_iterator(f.dir.path() + "/cache/0c/shards")) {
      if (entry.path().filename().string().rfind(f.manifest.shards[shard].file + ".", 0) != 0)
        continue;
      return !FileLock::acquire(entry.path().string(), LockMode::kExclusive, false, false).is_ok();
    }
    ADD_FAILURE() << "shard " << shard << " is not cached";
    return false;
  };
  const std::vector<int> order = {2, 0, 1, 3, 4};
  const ShardSchedule schedule = in_turn(f.manifest, order);
  source->advise(schedule, 0);
  for (int64_t p = schedule.now[2].first; p <= schedule.now[2].last; p += 7) {
    source->advance(p);
    { ShardPin pin = source->acquire(2, nullptr).value_or_throw(); }
    EXPECT_TRUE(pinned(2)) << "kept mapped with no pin while live, at " << p;
  }
  // Shard 0 pinned ahead of its interval: mapped only while pinned.
  { ShardPin ahead = source->acquire(0, nullptr).value_or_throw(); }
  EXPECT_FALSE(pinned(0));
  source->advance(schedule.now[2].last + 1);
  EXPECT_FALSE(pinned(2)) << "let go once its interval is over";
  EXPECT_EQ(f.downloads(), (std::vector<int>{2, 0}));
}

// A download that fails verification is fetched once more: damaged once, the shard is used;
// damaged again, kCorrupt naming its URL, and nothing is kept. One thread, no downloaders.
TEST(RemoteShardSourceTest, BytesFailingVerificationAreFetchedOnceMore) {
  Fixture f;
  auto source = f.source(uint64_t{1} << 30, 0);
  f.damaged = 1;
  ASSERT_TRUE(source->acquire(0, nullptr).is_ok());
  EXPECT_EQ(f.downloads(), (std::vector<int>{0, 0}));
  f.damaged = -1;
  Result<ShardPin> refused = source->acquire(1, nullptr);
  ASSERT_EQ(refused.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(refused.status().message().rfind("s3://b/ds/" + f.manifest.shards[1].file + ": ", 0),
            0u)
      << refused.status().message();
  EXPECT_EQ(f.downloads(), (std::vector<int>{0, 0, 1, 1}));
}

// A cached shard whose record was damaged since an earlier run is fetched again, once, by the
// next run's pin: the run goes on.
TEST(RemoteShardSourceTest, ACachedShardFailingItsRecordChecksIsFetchedAgain) {
  Fixture f;
  { ASSERT_TRUE(f.source(uint64_t{1} << 30, 0)->acquire(0, nullptr).is_ok()); }
  for (const auto& entry : std::filesystem::directory_iterator(f.dir.path() + "/cache/0c/shards"))
    testing::flip_byte(entry.path().string(),
                       testing::record_location(f.dir.path() + "/ds", 0).second);
  auto next = f.source(uint64_t{1} << 30, 0);
  Result<ShardPin> pin = next->acquire(0, nullptr);
  EXPECT_TRUE(pin.is_ok()) << pin.status().to_string();
  EXPECT_EQ(f.downloads(), (std::vector<int>{0, 0}));
}

// The first record of each shard, as the dataset numbers records.
std::vector<int64_t> first_records(const Manifest& m) {
  std::vector<int64_t> first;
  int64_t at = 0;
  for (const ShardInfo& info : m.shards) {
    first.push_back(at);
    at += static_cast<int64_t>(info.records);
  }
  return first;
}

// A piece that finds the budget full of another piece's pins waits, with none of its own held,
// until they are let go, then pins its shard.
TEST(RemoteShardSourceTest, APieceWithNoRoomWaitsForAnotherPiecesPinsToGo) {
  Fixture f;
  auto source = f.source(f.bytes_of({0, 1}), /*downloaders=*/0);
  auto dataset = Dataset::open(source).value_or_throw();
  const std::vector<int64_t> first = first_records(f.manifest);
  const int64_t other[] = {first[0], first[1]};
  std::optional<ShardPins> held = dataset->pin(other, 2, nullptr).value_or_throw();
  std::atomic<bool> done{false};
  Status waited;
  std::thread piece([&] {
    waited = dataset->pin(&first[2], 1, nullptr).status();
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done) << "failed at once: " << waited.to_string();
  held.reset();
  piece.join();
  EXPECT_TRUE(waited.is_ok()) << waited.to_string();
  EXPECT_EQ(f.downloads(), (std::vector<int>{0, 1, 2}));
}

// A piece the loader does not wait for yet waits while the budget holds shards needed before
// its own, unpinned, until the loader moves past them; the piece it waits for fails at once.
TEST(RemoteShardSourceTest, APieceAheadWaitsForTheLoaderToMoveOnThePieceAwaitedFails) {
  Fixture f;
  auto source = f.source(f.bytes_of({0, 1}), /*downloaders=*/0);
  auto dataset = Dataset::open(source).value_or_throw();
  const std::vector<int64_t> first = first_records(f.manifest);
  source->advise(in_turn(f.manifest, {0, 1, 2, 3, 4}), /*lookahead=*/0);
  for (int s : {0, 1}) ASSERT_TRUE(dataset->pin(&first[s], 1, nullptr).is_ok());
  const Status awaited = dataset->pin(&first[2], 1, nullptr, [] { return true; }).status();
  EXPECT_EQ(awaited.code(), StatusCode::kNoRoom) << awaited.to_string();
  std::atomic<bool> done{false};
  Status waited;
  std::thread piece([&] {
    waited = dataset->pin(&first[2], 1, nullptr, [] { return false; }).status();
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done) << "failed at once: " << waited.to_string();
  source->advance(first[2]);
  piece.join();
  EXPECT_TRUE(waited.is_ok()) << waited.to_string();
  EXPECT_EQ(f.downloads(), (std::vector<int>{0, 1, 2}));
}

// The wait ends with the loader's request to stop.
TEST(RemoteShardSourceTest, APieceWaitingForRoomStopsWhenCancelled) {
  Fixture f;
  auto source = f.source(f.bytes_of({0}), /*downloaders=*/0);
  auto dataset = Dataset::open(source).value_or_throw();
  const std::vector<int64_t> first = first_records(f.manifest);
  ShardPins held = dataset->pin(&first[0], 1, nullptr).value_or_throw();
  std::atomic<bool> cancel{false};
  Status waited;
  std::thread piece(
      [&] { waited = dataset->pin(&first[1], 1, [&] { return cancel.load(); }).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cancel = true;
  piece.join();
  EXPECT_EQ(waited.code(), StatusCode::kCancelled) << waited.to_string();
}

// Single-threaded: with no pin held in the process, no room is final at once, in one line.
TEST(RemoteShardSourceTest, NoRoomWithNothingHeldHereFailsAtOnce) {
  Fixture f;
  auto source = f.source(f.bytes_of({0}) - 1, /*downloaders=*/0);
  auto dataset = Dataset::open(source).value_or_throw();
  const std::vector<int64_t> first = first_records(f.manifest);
  const auto start = std::chrono::steady_clock::now();
  Status failed = dataset->pin(&first[0], 1, nullptr).status();
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::duration<double>(RemoteShardSource::kRoomWaitSeconds / 3));
  EXPECT_EQ(failed.code(), StatusCode::kNoRoom);
  EXPECT_EQ(failed.message().find('\n'), std::string::npos);
  EXPECT_NE(failed.message().find("its budget of"), std::string::npos) << failed.message();
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// Two users of one cache at its floor (one live shard each and one coming), in one thread,
// deterministic: a user whose awaited shard finds no room lets go of the shard it keeps, so
// that the other can evict it; alone, it fails at once.
TEST(RemoteShardSourceTest, UsersOfOneCacheAtItsFloorTakeTurns) {
  Fixture f;
  const uint64_t budget = f.bytes_of({0, 1});
  auto a = f.source(budget, /*downloaders=*/0);
  auto b = f.source(budget, /*downloaders=*/0);
  const ShardSchedule schedule = in_turn(f.manifest, {0, 1, 2, 3, 4});
  a->advise(schedule, 0);
  b->advise(in_turn(f.manifest, {3, 4, 0, 1, 2}), 0);
  { ShardPin pin = a->acquire(0, nullptr).value_or_throw(); }  // kept: live
  { ShardPin pin = b->acquire(3, nullptr).value_or_throw(); }  // kept: live
  ASSERT_EQ(b->acquire(4, nullptr).status().code(), StatusCode::kNoRoom);
  uint64_t changes = b->room_changes();
  EXPECT_TRUE(b->wait_for_room(changes, /*awaited=*/true));
  EXPECT_NE(b->room_changes(), changes) << "shard 3 let go: a change";
  a->advance(schedule.now[0].last);  // shard 0 still live for a
  EXPECT_TRUE(a->acquire(1, nullptr).is_ok()) << "b's shard 3 gives way";
  EXPECT_EQ(f.downloads(), (std::vector<int>{0, 3, 1}));
  changes = b->room_changes();
  EXPECT_TRUE(b->wait_for_room(changes, true)) << "a may still move on";
  a.reset();
  EXPECT_FALSE(b->wait_for_room(b->room_changes(), true)) << "alone: nothing will make room";
}

// Three processes read their own orders through one cache at its floor (room for 2 shards;
// each keeps its live one while it reads it for a while): they take turns, and each reads every
// shard's records. Before, the one finding no room failed within a second.
TEST(RemoteShardSourceTest, ProcessesSharingACacheAtItsFloorTakeTurns) {
  Fixture f;
  const uint64_t budget = f.bytes_of({0, 1});
  const std::vector<std::vector<int>> orders = {
      {0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {2, 5, 0, 3, 1, 4}};
  const std::string out = f.dir.path() + "/out";
  std::vector<pid_t> children;
  for (size_t c = 0; c < orders.size(); ++c) {
    const pid_t child = ::fork();
    if (child == 0) {
      auto source = f.source(budget, /*downloaders=*/2);
      auto dataset = Dataset::open(source).value_or_throw();
      const ShardSchedule schedule = in_turn(f.manifest, orders[c]);
      source->advise(schedule, 0);
      int code = 0;
      for (int s : orders[c]) {
        source->advance(schedule.now[s].first);
        int64_t record = 0;  // the shard's first record
        for (int k = 0; k < s; ++k) record += static_cast<int64_t>(f.manifest.shards[k].records);
        Result<ShardPins> pins = dataset->pin(&record, 1, nullptr, [] { return true; });
        if (!pins.is_ok()) {
          (void)write_file_atomically(out + std::to_string(c), pins.status().message());
          ::_exit(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // reading it
        if (!dataset->verify_record(static_cast<uint64_t>(record)).is_ok()) code = 2;
      }
      source.reset();
      ::_exit(code);
    }
    children.push_back(child);
  }
  for (size_t c = 0; c < children.size(); ++c) {
    int status = 0;
    ::waitpid(children[c], &status, 0);
    Result<std::string> failure = read_file(out + std::to_string(c));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "process " << c << ": " << (failure.is_ok() ? failure.value() : "");
  }
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// A reader going shard by shard (verify, inspect) over a cache whose room another user's pins
// hold waits for them to go, as the loader's pieces do, instead of failing at once.
TEST(RemoteShardSourceTest, ShardByShardReadersWaitForAnotherUsersPins) {
  Fixture f;
  const uint64_t budget = f.bytes_of({0, 1});
  auto holder = f.source(budget, /*downloaders=*/0);
  std::optional<ShardPin> a = holder->acquire(0, nullptr).value_or_throw();
  std::optional<ShardPin> b = holder->acquire(1, nullptr).value_or_throw();
  auto reader = Dataset::open(f.source(budget, 0)).value_or_throw();
  std::atomic<bool> done{false};
  Status read;
  std::thread verify([&] {
    read = reader->for_each_record([&](uint64_t i) { return reader->verify_record(i); });
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done) << "failed at once: " << read.to_string();
  a.reset();
  b.reset();
  verify.join();
  EXPECT_TRUE(read.is_ok()) << read.to_string();
}

}  // namespace
}  // namespace stoker
