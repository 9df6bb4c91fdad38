// The remote cache's budget kept by its ledger (cache_ledger.h): across processes, and when the
// ledger disagrees with the disk.
#include "stoker/cache/cache_ledger.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "stoker/cache/shard_cache.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kObject = 4096;
constexpr int kHeld = 8;  // the budget, in objects
constexpr uint64_t kBudget = kHeld * kObject;

// `n` objects of kObject bytes, their names and identities drawn from `family`.
std::vector<ShardInfo> objects(int family, int n) {
  std::vector<ShardInfo> infos(n);
  for (int i = 0; i < n; ++i) {
    infos[i].file = fmt::format("v{}@{}", family, i);
    infos[i].bytes = kObject;
    infos[i].index_checksum = (uint64_t(family) << 32) + i + 1;
  }
  return infos;
}

Status write_object(const ShardInfo& info, int fd, const std::function<bool()>&) {
  const std::string bytes(info.bytes, 'b');
  return ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())
             ? Status::ok()
             : io_error("pwrite failed");
}

EvictionAdvice lru() {
  EvictionAdvice advice;
  advice.policy = EvictionPolicy::kLru;
  return advice;
}

// What the cache at `dir` holds on disk (shards and downloads), by a listing.
uint64_t bytes_on_disk(const std::string& dir) {
  uint64_t total = 0;
  for (const std::string& d : cache_dataset_dirs(dir)) {
    for (const CacheFile& f : list_cache_files(d + "/shards", is_cached_file_name))
      total += f.bytes;
    for (const CacheFile& f : list_cache_files(d + "/tmp", is_download_name)) total += f.bytes;
  }
  return total;
}

// The same, under cache.lock: no admission or eviction half made.
uint64_t bytes_on_disk_locked(const std::string& dir) {
  FileLock lock =
      FileLock::acquire(dir + "/cache.lock", LockMode::kExclusive, true, true).value_or_throw();
  return bytes_on_disk(dir);
}

// Admits objects [first, first + n) of `family`, checking the disk against the budget after each:
// whether it always held.
bool admit_within_budget(const ShardCache& cache, int family, int first, int n) {
  DatasetCache part =
      cache.objects(fmt::format("v{}", family), objects(family, first + n)).value_or_throw();
  for (int i = first; i < first + n; ++i) {
    if (!part.fetch(i, write_object, lru()).is_ok()) return false;
    if (bytes_on_disk_locked(cache.dir()) > kBudget) return false;
  }
  return true;
}

TEST(CacheLedgerTest, TwoProcessesAdmittingAtOnceKeepTheBudget) {
  testing::TempDir dir;
  const std::string cache_dir = dir.path() + "/cache";
  ShardCache::open(cache_dir, kBudget).value_or_throw();
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    const pid_t child = ::fork();
    if (child == 0) {
      auto cache = ShardCache::open(cache_dir, kBudget);
      ::_exit(cache.is_ok() && admit_within_budget(*cache.value(), c, 0, 60) ? 0 : 1);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the budget held in each";
  }
  auto cache = ShardCache::open(cache_dir, kBudget).value_or_throw();
  EXPECT_EQ(cache->usage().bytes, bytes_on_disk(cache_dir));
  EXPECT_EQ(bytes_on_disk(cache_dir), kBudget) << "full, not over";
}

// The same in one process and one thread, deterministic: two caches in turn.
TEST(CacheLedgerTest, TwoCachesAdmittingInTurnKeepTheBudget) {
  testing::TempDir dir;
  auto first = ShardCache::open(dir.path(), kBudget).value_or_throw();
  auto second = ShardCache::open(dir.path(), kBudget).value_or_throw();
  for (int round = 0; round < 6; ++round) {
    ASSERT_TRUE(admit_within_budget(*first, 0, round * 5, 5));
    ASSERT_TRUE(admit_within_budget(*second, 1, round * 5, 5));
  }
  EXPECT_EQ(first->usage().bytes, bytes_on_disk(dir.path()));
  EXPECT_EQ(second->usage().bytes, kBudget);
}

// A ledger that cannot be written (as on a full disk; here its temporary's name is taken by a
// folder): no ledger file is left, each admission counts the disk by a listing instead, and the
// budget holds; once it can be written, it is again.
TEST(CacheLedgerTest, ALedgerThatCannotBeWrittenIsAbsentAndTheBudgetHolds) {
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path(), kBudget).value_or_throw();
  ASSERT_TRUE(admit_within_budget(*cache, 0, 0, 3));
  fs::remove(dir.path() + "/cache.ledger");
  fs::create_directory(dir.path() + "/cache.ledger.tmp");
  ASSERT_TRUE(admit_within_budget(*cache, 1, 0, kHeld + 2));
  EXPECT_FALSE(fs::exists(dir.path() + "/cache.ledger"));
  EXPECT_EQ(cache->usage().bytes, bytes_on_disk(dir.path()));
  EXPECT_EQ(bytes_on_disk(dir.path()), kBudget);
  fs::remove(dir.path() + "/cache.ledger.tmp");
  ASSERT_TRUE(admit_within_budget(*cache, 2, 0, 2));
  EXPECT_TRUE(fs::exists(dir.path() + "/cache.ledger"));
}

// A full cache, its ledger then made to disagree with the disk by `disagree`: the next
// admissions rebuild it and keep the budget, counting what the disk holds.
void disagreeing_ledger_is_rebuilt(const std::function<void(const std::string& dir)>& disagree) {
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path(), kBudget).value_or_throw();
  ASSERT_TRUE(admit_within_budget(*cache, 0, 0, kHeld));
  // (later than the file system's clock tick of the cache's last change, as by hand)
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  disagree(dir.path());
  auto later = ShardCache::open(dir.path(), kBudget).value_or_throw();  // another process's copy
  ASSERT_TRUE(admit_within_budget(*cache, 1, 0, 3));
  ASSERT_TRUE(admit_within_budget(*later, 2, 0, 3));
  EXPECT_EQ(cache->usage().bytes, bytes_on_disk(dir.path()));
  EXPECT_EQ(later->usage().bytes, bytes_on_disk(dir.path()));
}

std::string ledger_of(const std::string& dir) { return read_file(dir + "/cache.ledger").value(); }

TEST(CacheLedgerTest, AnEditedLedgerIsRebuilt) {
  disagreeing_ledger_is_rebuilt([](const std::string& dir) {
    std::string text = ledger_of(dir);
    // the next to last file added (the last is checked against the disk): evicted late
    const size_t at = text.rfind(" 4096 ", text.rfind(" 4096 ") - 1);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 6, " 1 ");  // counted as 1 byte
    ASSERT_TRUE(write_file_atomically(dir + "/cache.ledger", text).is_ok());
  });
}

TEST(CacheLedgerTest, ALedgerCutShortIsRebuilt) {
  for (int keep_lines : {1, 3}) {  // its header and an object's lines, whole; then mid-line
    disagreeing_ledger_is_rebuilt([&](const std::string& dir) {
      const std::string text = ledger_of(dir);
      size_t cut = 0;
      for (int l = 0; l < keep_lines; ++l) cut = text.find('\n', cut) + 1;
      ASSERT_EQ(::truncate((dir + "/cache.ledger").c_str(), static_cast<off_t>(cut)), 0);
    });
    disagreeing_ledger_is_rebuilt([&](const std::string& dir) {
      const std::string text = ledger_of(dir);
      ASSERT_EQ(::truncate((dir + "/cache.ledger").c_str(), static_cast<off_t>(text.size() - 9)),
                0);
    });
  }
}

// A process killed between the ledger and the file: its line is the ledger's last, the file as
// it was (removed: counted no more; added: counted, not there).
TEST(CacheLedgerTest, AProcessKilledBetweenTheLedgerAndTheFileLeavesItRebuilt) {
  disagreeing_ledger_is_rebuilt([](const std::string& dir) {
    CacheLedger ledger(dir);
    ASSERT_TRUE(ledger.sync().is_ok());
    const std::string kept =
        list_cache_files(dir + "/" + kObjectsKey + "/shards", is_cached_file_name).front().path;
    ledger.remove(kept);  // and killed before the unlink
  });
  disagreeing_ledger_is_rebuilt([](const std::string& dir) {
    CacheLedger ledger(dir);
    ASSERT_TRUE(ledger.sync().is_ok());
    ledger.add(dir + "/" + kObjectsKey + "/shards/gone.00000000000000aa", 4 * kObject, 0);
  });
}

TEST(CacheLedgerTest, FilesRemovedOrAddedByHandAreNoticed) {
  disagreeing_ledger_is_rebuilt([](const std::string& dir) {
    const auto files = list_cache_files(dir + "/" + kObjectsKey + "/shards", is_cached_file_name);
    fs::remove(files[2].path);
    fs::remove(files[5].path);
  });
  disagreeing_ledger_is_rebuilt([](const std::string& dir) {
    ASSERT_TRUE(write_file_atomically(dir + "/" + kObjectsKey + "/shards/copied.00000000000000bb",
                                      std::string(2 * kObject, 'c'))
                    .is_ok());
  });
  // Removed by hand, then the room is used without evicting what is still there.
  testing::TempDir dir;
  auto cache = ShardCache::open(dir.path(), kBudget).value_or_throw();
  ASSERT_TRUE(admit_within_budget(*cache, 0, 0, kHeld));
  const auto files =
      list_cache_files(dir.path() + "/" + kObjectsKey + "/shards", is_cached_file_name);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  fs::remove(files[6].path);  // the most recently used: eviction would reach them last
  fs::remove(files[7].path);
  ASSERT_TRUE(admit_within_budget(*cache, 1, 0, 2));
  EXPECT_EQ(
      list_cache_files(dir.path() + "/" + kObjectsKey + "/shards", is_cached_file_name).size(),
      size_t{kHeld})
      << "none of the six left evicted";
}

// A ledger rewritten by one process (once it holds twice the lines it needs) is read whole by
// another.
TEST(CacheLedgerTest, ARewrittenLedgerIsReadWhole) {
  testing::TempDir dir;
  auto first = ShardCache::open(dir.path(), kBudget).value_or_throw();
  auto second = ShardCache::open(dir.path(), kBudget).value_or_throw();
  ASSERT_TRUE(admit_within_budget(*second, 1, 0, 2));
  const uint64_t size_before = fs::file_size(dir.path() + "/cache.ledger");
  ASSERT_TRUE(admit_within_budget(*first, 0, 0, 1100));  // 4 lines each: rewritten once
  EXPECT_LT(fs::file_size(dir.path() + "/cache.ledger"), size_before + 100'000);
  ASSERT_TRUE(admit_within_budget(*second, 1, 2, 2));
  EXPECT_EQ(second->usage().bytes, kBudget);
  EXPECT_EQ(bytes_on_disk(dir.path()), kBudget);
}

}  // namespace
}  // namespace stoker
