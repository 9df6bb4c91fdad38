#include "stoker/cache/shard_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// A dataset of several small shards, the "remote" its downloads copy from.
struct Remote {
  testing::TempDir dir;
  Manifest manifest;
  Remote() {
    testing::write_labelled_dataset(dir.path() + "/ds", 600, 10, 2048);
    manifest = Manifest::load(dir.path() + "/ds").value_or_throw();
  }
  std::string path(int shard) const { return dir.path() + "/ds/" + manifest.shards[shard].file; }
  std::string bytes(int shard) const { return read_file(path(shard)).value_or_throw(); }
};

// Copies the remote shard into the cache's file; counts downloads per shard.
struct Downloads {
  const Remote& remote;
  std::map<std::string, int> count;
  ShardDownload copy() {
    return [this](const ShardInfo& info, int fd, const std::function<bool()>&) {
      ++count[info.file];
      const std::string bytes = read_file(remote.dir.path() + "/ds/" + info.file).value();
      return ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())
                 ? Status::ok()
                 : io_error("pwrite failed");
    };
  }
};

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string cached_name(const Manifest& m, int shard) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(m.shards[shard].index_checksum));
  return m.shards[shard].file + "." + hex;
}

uint64_t bytes_of(const Manifest& m, std::initializer_list<int> shards) {
  uint64_t total = 0;
  for (int s : shards) total += m.shards[s].bytes;
  return total;
}

EvictionAdvice next_uses(std::map<int, int64_t> uses, int64_t needed_soon_before = 0) {
  EvictionAdvice advice;
  advice.next_use = [uses](int shard) { return uses.at(shard); };
  advice.needed_soon_before = needed_soon_before;
  return advice;
}

TEST(ShardCacheTest, AShardIsDownloadedOnceVerifiedAndNamedByItsContent) {
  Remote remote;
  ASSERT_GE(remote.manifest.shards.size(), 5u);
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path() + "/cache", uint64_t{1} << 30).value_or_throw();
  DatasetCache ds = cache->dataset("00ff", "http://127.0.0.1/ds", remote.manifest).value_or_throw();
  Downloads downloads{remote, {}};
  {
    CachedShard shard = ds.fetch(1, downloads.copy(), EvictionAdvice()).value_or_throw();
    EXPECT_EQ(shard.reader().records(), remote.manifest.shards[1].records);
    EXPECT_EQ(read_file(shard.reader().path()).value(), remote.bytes(1));
  }
  ASSERT_TRUE(ds.fetch(1, downloads.copy(), EvictionAdvice()).is_ok());
  EXPECT_EQ(downloads.count[remote.manifest.shards[1].file], 1) << "the second is a hit";
  EXPECT_EQ(files_in(ds.dir() + "/shards"),
            std::vector<std::string>{cached_name(remote.manifest, 1)});
  EXPECT_TRUE(files_in(ds.dir() + "/tmp").empty());
  EXPECT_EQ(cache->usage().bytes, remote.manifest.shards[1].bytes);
  EXPECT_EQ(cache->usage().shards, 1u);
  EXPECT_EQ(read_file(ds.dir() + "/source.json").value(), "{\"source\":\"http://127.0.0.1/ds\"}\n");
  EXPECT_FALSE(ds.find(2).value_or_throw().has_value()) << "find never downloads";
}

TEST(ShardCacheTest, BadBytesAreRefusedBeforeUseAndNothingIsKept) {
  Remote remote;
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path(), uint64_t{1} << 30).value_or_throw();
  DatasetCache ds = cache->dataset("01", "s3://b/ds", remote.manifest).value_or_throw();
  const std::string good = remote.bytes(0);
  auto serve = [](std::string bytes) {
    return [bytes](const ShardInfo&, int fd, const std::function<bool()>&) {
      return ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())
                 ? Status::ok()
                 : io_error("pwrite failed");
    };
  };
  std::string flipped = good;
  const auto [path, offset] = testing::record_location(remote.dir.path() + "/ds", 7);
  ASSERT_EQ(path, remote.path(0));
  flipped[offset] ^= 0x10;  // inside record 7: only its checksum tells
  std::string cut = good.substr(0, good.size() - 100);
  for (const auto& [bad, words] : std::vector<std::pair<std::string, std::string>>{
           {flipped, ": does not match the manifest this run read (record 7"},
           {cut, ": does not match the manifest this run read ("},
           {good + "x", "bytes downloaded"}}) {
    Result<CachedShard> shard = ds.fetch(0, serve(bad), EvictionAdvice());
    ASSERT_FALSE(shard.is_ok());
    EXPECT_EQ(shard.status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(
        shard.status().message().rfind("s3://b/ds/" + remote.manifest.shards[0].file + ": ", 0), 0u)
        << shard.status().message();
    EXPECT_EQ(shard.status().message().find(".part"), std::string::npos) << "a file now gone";
    EXPECT_NE(shard.status().message().find(words), std::string::npos) << shard.status().message();
    EXPECT_EQ(shard.status().message().find('\n'), std::string::npos);
    EXPECT_TRUE(files_in(ds.dir() + "/shards").empty());
    EXPECT_TRUE(files_in(ds.dir() + "/tmp").empty());
  }
  Result<CachedShard> failed = ds.fetch(
      0,
      [](const ShardInfo&, int, const std::function<bool()>&) {
        return io_error("HTTP 503 after 10 attempts");
      },
      EvictionAdvice());
  EXPECT_EQ(failed.status().message(), "HTTP 503 after 10 attempts");
  EXPECT_TRUE(files_in(ds.dir() + "/tmp").empty());
  EXPECT_TRUE(ds.fetch(0, serve(good), EvictionAdvice()).is_ok());
}

TEST(ShardCacheTest, AFullCacheEvictsTheShardNeededLastAndNeverAPinnedOne) {
  Remote remote;
  const Manifest& m = remote.manifest;
  testing::TempDir dir;
  // Room for three of these shards (the first four are of one size).
  ASSERT_EQ(m.shards[0].bytes, m.shards[3].bytes);
  auto cache = ShardCache::open(dir.path(), bytes_of(m, {0, 1, 2})).value_or_throw();
  DatasetCache ds = cache->dataset("02", "s3://b/ds", m).value_or_throw();
  Downloads downloads{remote, {}};
  const EvictionAdvice advice = next_uses({{0, 10}, {1, 50}, {2, 30}, {3, 20}});
  for (int s : {0, 1, 2}) ASSERT_TRUE(ds.fetch(s, downloads.copy(), advice).is_ok());
  ASSERT_TRUE(ds.fetch(3, downloads.copy(), advice).is_ok());
  EXPECT_EQ(files_in(ds.dir() + "/shards"),
            (std::vector<std::string>{cached_name(m, 0), cached_name(m, 2), cached_name(m, 3)}))
      << "shard 1, next needed at 50, went";

  // Shard 2 (next at 30) pinned: to admit 1 the cache gives up 3 (20)? No: 3 is needed before
  // 1 (50), so next-use refuses, and the budget holds nothing else.
  CachedShard pinned = ds.find(2).value_or_throw().value();
  Result<CachedShard> refused = ds.fetch(1, downloads.copy(), advice);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("raise --cache-gb"), std::string::npos)
      << refused.status().message();
  // A shard needed sooner than 0 (next at 10) displaces it: 2 stays pinned.
  ASSERT_TRUE(
      ds.fetch(1, downloads.copy(), next_uses({{0, 40}, {1, 5}, {2, 30}, {3, 35}})).is_ok());
  EXPECT_EQ(files_in(ds.dir() + "/shards"),
            (std::vector<std::string>{cached_name(m, 1), cached_name(m, 2), cached_name(m, 3)}));
}

TEST(ShardCacheTest, ShardsNeededSoonStayAndTheErrorIsOneLine) {
  Remote remote;
  const Manifest& m = remote.manifest;
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path(), bytes_of(m, {0, 1})).value_or_throw();
  DatasetCache ds = cache->dataset("03", "s3://b/ds", m).value_or_throw();
  Downloads downloads{remote, {}};
  const EvictionAdvice advice = next_uses({{0, 100}, {1, 200}, {2, 0}}, /*needed_soon=*/300);
  for (int s : {0, 1}) ASSERT_TRUE(ds.fetch(s, downloads.copy(), advice).is_ok());
  Result<CachedShard> refused = ds.fetch(2, downloads.copy(), advice);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kNoRoom);
  const std::string& message = refused.status().message();
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_EQ(message.rfind("cache " + dir.path() + ": its budget of ", 0), 0u) << message;
  EXPECT_NE(message.find(m.shards[2].file), std::string::npos);

  auto tiny = ShardCache::open(dir.path(), m.shards[0].bytes - 1).value_or_throw();
  DatasetCache small = tiny->dataset("04", "s3://b/ds", m).value_or_throw();
  EXPECT_FALSE(small.fetch(0, downloads.copy(), EvictionAdvice()).is_ok());
}

TEST(ShardCacheTest, OldVersionsThenOtherDatasetsLeastRecentlyUsedGoFirst) {
  Remote remote;
  const Manifest& m = remote.manifest;
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path(), bytes_of(m, {0, 1, 2})).value_or_throw();
  DatasetCache a = cache->dataset("0a", "s3://b/a", m).value_or_throw();
  DatasetCache b = cache->dataset("0b", "s3://b/b", m).value_or_throw();
  Downloads downloads{remote, {}};
  const EvictionAdvice advice = next_uses({{0, 1}, {1, 2}, {2, 3}, {3, 4}});
  for (int s : {0, 1}) ASSERT_TRUE(a.fetch(s, downloads.copy(), advice).is_ok());
  // A's shard 0 used long ago, 1 lately.
  auto make_old = [&] {
    const struct timespec long_ago[2] = {{1000, 0}, {1000, 0}};
    ASSERT_EQ(
        ::utimensat(AT_FDCWD, (a.dir() + "/shards/" + cached_name(m, 0)).c_str(), long_ago, 0), 0);
  };
  make_old();
  // An older version of B's shard 3, under another content name (written by the cache long ago:
  // the ledger, gone, is rebuilt with it).
  const std::string stale = b.dir() + "/shards/" + m.shards[3].file + ".00000000000000aa";
  throw_if_error(write_file_atomically(stale, std::string(m.shards[3].bytes, 'x')));
  fs::remove(dir.path() + "/cache.ledger");

  ASSERT_TRUE(b.fetch(2, downloads.copy(), advice).is_ok());
  EXPECT_FALSE(fs::exists(stale)) << "the old version goes first";
  EXPECT_EQ(files_in(a.dir() + "/shards").size(), 2u);
  {
    CachedShard in_use = a.find(0).value_or_throw().value();  // A's least recently used, pinned
    make_old();
    ASSERT_TRUE(b.fetch(3, downloads.copy(), advice).is_ok());
  }
  EXPECT_EQ(files_in(a.dir() + "/shards"), std::vector<std::string>{cached_name(m, 0)})
      << "then A's least recently used that no process has pinned";
}

// Files the cache did not write are neither counted nor removed, however full it is.
TEST(ShardCacheTest, EvictionNeverTouchesAFileTheCacheDidNotWrite) {
  Remote remote;
  const Manifest& m = remote.manifest;
  testing::TempDir dir;
  auto cache =
      ShardCache::open(dir.path(), std::max(bytes_of(m, {0}), bytes_of(m, {1}))).value_or_throw();
  DatasetCache ds = cache->dataset("0d", "s3://b/d", m).value_or_throw();
  const std::vector<std::string> foreign = {
      ds.dir() + "/shards/notes.txt", ds.dir() + "/shards/" + m.shards[1].file + ".not-hex",
      ds.dir() + "/shards/" + m.shards[1].file, ds.dir() + "/tmp/keep.txt", dir.path() + "/README"};
  for (const std::string& f : foreign)
    throw_if_error(write_file_atomically(f, std::string(m.shards[1].bytes, 'x')));
  Downloads downloads{remote, {}};
  const EvictionAdvice advice = next_uses({{0, 2}, {1, 1}});
  ASSERT_TRUE(ds.fetch(0, downloads.copy(), advice).is_ok()) << "the foreign bytes not counted";
  ASSERT_TRUE(ds.fetch(1, downloads.copy(), advice).is_ok()) << "shard 0 gives way";
  EXPECT_FALSE(ds.holds(0));
  for (const std::string& f : foreign) EXPECT_TRUE(fs::exists(f)) << f;
  EXPECT_EQ(cache->usage().bytes, m.shards[1].bytes);
}

TEST(ShardCacheTest, AFolderThatIsNotACacheIsNeverUsed) {
  testing::TempDir dir;
  std::ofstream(dir.path() + "/notes.txt") << "mine";
  Result<std::shared_ptr<ShardCache>> refused = ShardCache::open(dir.path(), 1 << 20);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().message(),
            dir.path() +
                ": not a stoker cache (no STOKER-CACHE) and not empty; name an empty or "
                "new folder for the cache");
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"notes.txt"});

  fs::create_directories(dir.path() + "/c");
  ASSERT_TRUE(ShardCache::open(dir.path() + "/c", 1 << 20).is_ok());
  ASSERT_TRUE(ShardCache::open(dir.path() + "/c", 1 << 20).is_ok()) << "reopened";
  throw_if_error(
      write_file_atomically(dir.path() + "/c/STOKER-CACHE", "stoker shard cache\nlayout 9\n"));
  EXPECT_EQ(ShardCache::open(dir.path() + "/c", 1 << 20).status().code(),
            StatusCode::kInvalidArgument);

  auto cache = ShardCache::open(dir.path() + "/d", 1 << 20).value_or_throw();
  for (const std::string& key : std::vector<std::string>{"", "0G", "../x", std::string(65, 'a')})
    EXPECT_EQ(cache->dataset(key, "s3://b/x", Manifest()).status().code(),
              StatusCode::kInvalidArgument)
        << key;
}

TEST(ShardCacheTest, ACorruptedCachedShardIsRemovedAndDownloadedAgain) {
  Remote remote;
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path(), uint64_t{1} << 30).value_or_throw();
  DatasetCache ds = cache->dataset("05", "s3://b/ds", remote.manifest).value_or_throw();
  Downloads downloads{remote, {}};
  ASSERT_TRUE(ds.fetch(0, downloads.copy(), EvictionAdvice()).is_ok());
  const std::string cached = ds.dir() + "/shards/" + cached_name(remote.manifest, 0);
  testing::flip_byte(cached, fs::file_size(cached) - 20);  // in the index
  Result<std::optional<CachedShard>> found = ds.find(0);
  ASSERT_FALSE(found.is_ok());
  EXPECT_EQ(found.status().code(), StatusCode::kCorrupt);
  EXPECT_FALSE(fs::exists(cached));
  ASSERT_TRUE(ds.fetch(0, downloads.copy(), EvictionAdvice()).is_ok());
  EXPECT_EQ(downloads.count[remote.manifest.shards[0].file], 2);
}

// A record damaged in the cache after its download (its header and index intact) is found by
// the next run's first pin, which removes it: fetch() downloads it again. A run checks each
// shard it did not download once.
TEST(ShardCacheTest, ACachedShardWithADamagedRecordIsDownloadedAgainByTheNextRun) {
  Remote remote;
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path(), uint64_t{1} << 30).value_or_throw();
  DatasetCache run = cache->dataset("08", "s3://b/ds", remote.manifest).value_or_throw();
  Downloads downloads{remote, {}};
  ASSERT_TRUE(run.fetch(0, downloads.copy(), EvictionAdvice()).is_ok());
  const std::string cached = run.dir() + "/shards/" + cached_name(remote.manifest, 0);
  testing::flip_byte(cached, testing::record_location(remote.dir.path() + "/ds", 0).second);
  {
    Result<std::optional<CachedShard>> again = run.find(0);
    EXPECT_TRUE(again.is_ok()) << "checked at its download: " << again.status().to_string();
  }
  DatasetCache next = cache->dataset("08", "s3://b/ds", remote.manifest).value_or_throw();
  Result<std::optional<CachedShard>> found = next.find(0);
  ASSERT_EQ(found.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(found.status().message().find(cached_name(remote.manifest, 0)), std::string::npos)
      << found.status().message();
  EXPECT_FALSE(fs::exists(cached));
  ASSERT_TRUE(next.fetch(0, downloads.copy(), EvictionAdvice()).is_ok());
  EXPECT_EQ(downloads.count[remote.manifest.shards[0].file], 2);
}

// Processes of one machine: one download per shard, and a killed downloader leaves nothing.

// Appends a line to `log` (O_APPEND: atomic) per download, slowly.
ShardDownload logged_download(const Remote& remote, const std::string& log, int delay_ms) {
  return [&remote, log, delay_ms](const ShardInfo& info, int fd, const std::function<bool()>&) {
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    (void)!::write(log_fd, "get\n", 4);
    ::close(log_fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    const std::string bytes = read_file(remote.dir.path() + "/ds/" + info.file).value();
    (void)!::pwrite(fd, bytes.data(), bytes.size(), 0);
    return Status::ok();
  };
}

int lines_in(const std::string& path) {
  std::ifstream in(path);
  return static_cast<int>(
      std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

// A child process downloading shard 0 of `ds` for a minute: its pid, once its GET is logged.
pid_t downloader_stalled_midway(DatasetCache& ds, const Remote& remote, const std::string& log) {
  const pid_t child = ::fork();
  if (child == 0) {
    (void)ds.fetch(0, logged_download(remote, log, 60'000), EvictionAdvice());
    ::_exit(0);
  }
  while (lines_in(log) < 1) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return child;
}

TEST(ShardCacheTest, TwoProcessesFetchingOneShardDownloadItOnce) {
  Remote remote;
  testing::TempDir dir;
  const std::string log = dir.path() + "/gets";
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    const pid_t child = ::fork();
    if (child == 0) {
      auto cache = ShardCache::open(dir.path() + "/cache", uint64_t{1} << 30);
      if (!cache.is_ok()) ::_exit(2);
      auto ds = cache.value()->dataset("06", "s3://b/ds", remote.manifest);
      if (!ds.is_ok()) ::_exit(3);
      Result<CachedShard> shard =
          ds.value().fetch(0, logged_download(remote, log, 300), EvictionAdvice());
      ::_exit(shard.is_ok() && shard.value().reader().records() == remote.manifest.shards[0].records
                  ? 0
                  : 4);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(lines_in(log), 1);
}

// The same in one process and one thread, deterministic: the second user finds it.
TEST(ShardCacheTest, TwoUsersInTurnDownloadOnce) {
  Remote remote;
  testing::TempDir dir;
  const std::string log = dir.path() + "/gets";
  for (int user = 0; user < 2; ++user) {
    auto cache = ShardCache::open(dir.path() + "/cache", uint64_t{1} << 30).value_or_throw();
    DatasetCache ds = cache->dataset("07", "s3://b/ds", remote.manifest).value_or_throw();
    ASSERT_TRUE(ds.fetch(0, logged_download(remote, log, 0), EvictionAdvice()).is_ok());
  }
  EXPECT_EQ(lines_in(log), 1);
}

TEST(ShardCacheTest, ADownloaderKilledMidwayLeavesNoShardAndTheNextOneCleansUp) {
  Remote remote;
  testing::TempDir dir;
  const std::string log = dir.path() + "/gets";
  auto cache = ShardCache::open(dir.path() + "/cache", uint64_t{1} << 30).value_or_throw();
  DatasetCache ds = cache->dataset("08", "s3://b/ds", remote.manifest).value_or_throw();
  const pid_t child = downloader_stalled_midway(ds, remote, log);
  ASSERT_EQ(files_in(ds.dir() + "/tmp").size(), 1u) << "its .part, mid-download";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // The download lock died with it: this process downloads at once and removes the .part.
  ASSERT_TRUE(ds.fetch(0, logged_download(remote, log, 0), EvictionAdvice()).is_ok());
  EXPECT_EQ(lines_in(log), 2);
  ASSERT_TRUE(ds.fetch(1, logged_download(remote, log, 0), EvictionAdvice()).is_ok());
  EXPECT_TRUE(files_in(ds.dir() + "/tmp").empty()) << "the dead .part was removed";
  EXPECT_EQ(files_in(ds.dir() + "/shards").size(), 2u);
}

// A killed downloader's .part (and an interrupted Python loader's preallocated ones) go when
// the cache is next opened, not when a later download needs room; a live writer's stays.
TEST(ShardCacheTest, OpeningTheCacheRemovesDeadDownloadsOnly) {
  Remote remote;
  testing::TempDir dir;
  const std::string log = dir.path() + "/gets";
  auto cache = ShardCache::open(dir.path() + "/cache", uint64_t{1} << 30).value_or_throw();
  DatasetCache ds = cache->dataset("09", "s3://b/ds", remote.manifest).value_or_throw();
  const pid_t child = downloader_stalled_midway(ds, remote, log);
  ASSERT_EQ(files_in(ds.dir() + "/tmp").size(), 1u) << "its .part, mid-download";
  ShardCache::open(dir.path() + "/cache", uint64_t{1} << 30).value_or_throw();
  EXPECT_EQ(files_in(ds.dir() + "/tmp").size(), 1u) << "a live writer's .part stays";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ShardCache::open(dir.path() + "/cache", uint64_t{1} << 30).value_or_throw();
  EXPECT_TRUE(files_in(ds.dir() + "/tmp").empty()) << "the dead .part was removed at open";
  EXPECT_EQ(lines_in(log), 1) << "nothing downloaded";
}

}  // namespace
}  // namespace stoker
