// The cost of one admission to the remote cache (cache/shard_cache.h) by the number of files it
// holds: a cache of N sparse 64 KiB objects (a remote video's blocks), then admissions of new
// 64 KiB blocks through ShardCache::objects, timed one by one, with the budget above the cache
// ("fits": no eviction) and at it ("full": each admission evicts one), each as a video's blocks
// are admitted (sealed with their XXH3, no fsync) and as other objects are (fsynced, with their
// folder), and the first read of a sealed block by a new DatasetCache (its XXH3 checked); beside
// them, the parts an
// admission is made of, timed alone: the cache-wide flock, ShardCache::usage() (the sum every
// admission takes: a full listing before the ledger, the ledger's sync since), the fsync of a
// 64 KiB file and of its folder.
//
//   cache_admission DIR N [ADMISSIONS]     (DIR: a new folder, removed at the end)
//
// Prints one line per figure, medians in microseconds.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "stoker/cache/shard_cache.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/file_lock.h"

namespace {

using stoker::DatasetCache;
using stoker::ShardCache;
using stoker::ShardInfo;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kBlock = 64 * 1024;

double micros_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Times `body` `n` times: its median in microseconds.
double timed(int n, const std::function<void(int)>& body) {
  std::vector<double> times;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    body(i);
    times.push_back(micros_since(t0));
  }
  return median(times);
}

std::vector<ShardInfo> blocks(const std::string& prefix, int n) {
  std::vector<ShardInfo> infos(n);
  for (int i = 0; i < n; ++i) {
    infos[i].file = fmt::format("{}@{}", prefix, i);
    infos[i].bytes = kBlock;
    infos[i].index_checksum = 0x1000000000000000ull + i;
  }
  return infos;
}

// N sparse files named as the cache names its objects, written straight into its folder.
void fill(const std::string& objects_dir, int n) {
  for (const ShardInfo& b : blocks("held", n)) {
    const std::string path =
        fmt::format("{}/shards/{}.{:016x}", objects_dir, b.file, b.index_checksum);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::ftruncate(fd, kBlock) != 0) std::abort();
    ::close(fd);
  }
}

void run(const std::string& dir, int n, int admissions, bool full, stoker::ObjectCheck check) {
  const uint64_t budget = full ? uint64_t(n) * kBlock : uint64_t{1} << 50;
  auto cache = ShardCache::open(dir, budget).value_or_throw();
  DatasetCache held = cache->objects("held", blocks("held", 1)).value_or_throw();
  fill(held.dir(), n);
  static int round = 0;
  const std::vector<ShardInfo> incoming = blocks(fmt::format("new{}", round++), admissions + 1);
  DatasetCache fresh = cache->objects("new", incoming, check).value_or_throw();
  const std::string data(kBlock, 'x');
  const stoker::ShardDownload download = [&](const ShardInfo&, int fd,
                                             const std::function<bool()>&) {
    return ::pwrite(fd, data.data(), data.size(), 0) == ssize_t(data.size())
               ? stoker::Status::ok()
               : stoker::io_error("pwrite");
  };
  stoker::EvictionAdvice lru;
  lru.policy = stoker::EvictionPolicy::kLru;
  const auto admit = [&](int i) {
    if (!fresh.fetch(i, download, lru).is_ok()) std::abort();
  };
  const double first = timed(1, admit);  // a ledger absent: built by a scan
  const double each = timed(admissions, [&](int i) { admit(i + 1); });
  const bool sealed = check == stoker::ObjectCheck::kSealed;
  fmt::print("N={} {} {}: first admission {:.0f} us, then median {:.0f} us per admission\n", n,
             full ? "full (evicting)" : "fits", sealed ? "sealed" : "fsynced", first, each);
  if (!sealed || full) return;
  const double read = timed(admissions, [&](int i) {  // a new DatasetCache: the XXH3 checked
    DatasetCache later = cache->objects("new", incoming, check).value_or_throw();
    if (!later.fetch(i + 1, download, lru).is_ok()) std::abort();
  });
  fmt::print("N={} sealed: a block's first find by a new DatasetCache (XXH3 checked) {:.0f} us\n",
             n, read);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: cache_admission DIR N [ADMISSIONS]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int n = std::atoi(argv[2]);
  const int admissions = argc > 3 ? std::atoi(argv[3]) : 50;
  std::filesystem::remove_all(dir);
  for (const auto check : {stoker::ObjectCheck::kSize, stoker::ObjectCheck::kSealed}) {
    run(dir + "/fits", n, admissions, false, check);
    run(dir + "/full", n, admissions, true, check);
  }

  // The parts, alone, on the "fits" cache (N files and the admissions').
  const std::string cache_dir = dir + "/fits";
  auto cache = ShardCache::open(cache_dir, uint64_t{1} << 50).value_or_throw();
  const double lock = timed(admissions, [&](int) {
    stoker::FileLock::acquire(cache_dir + "/cache.lock", stoker::LockMode::kExclusive, true, true)
        .value_or_throw();
  });
  const double scan = timed(5, [&](int) { (void)cache->usage(); });
  const std::string probe = cache_dir + "/probe";
  const std::string data(kBlock, 'x');
  const double file_sync = timed(admissions, [&](int) {
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (::pwrite(fd, data.data(), data.size(), 0) != ssize_t(data.size())) std::abort();
    ::fsync(fd);
    ::close(fd);
  });
  const double dir_sync =
      timed(admissions, [&](int) { (void)stoker::fsync_directory(cache_dir + "/0b1ec75/shards"); });
  fmt::print(
      "N={} parts: cache.lock {:.0f} us, ShardCache::usage() {:.0f} us, write+fsync of 64 KiB "
      "{:.0f} us, fsync of the folder {:.0f} us\n",
      n, lock, scan, file_sync, dir_sync);
  cache.reset();
  std::filesystem::remove_all(dir);
}
