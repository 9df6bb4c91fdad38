// The loader over a remote dataset: LoaderCore advises the source of its order, the source's
// downloaders fetch ahead through the cache, and the batches are the local dataset's. A loader
// stopped while its data trickles in ends its transfers (issue 66, H4).

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "stoker/access/data_source.h"
#include "stoker/cache/remote_shard_source.h"
#include "stoker/pipeline/loader_core.h"
#include "stoker/store/dataset.h"
#include "stoker/testing/hostile_http_server.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

struct Counted {
  std::mutex mutex;
  uint64_t bytes = 0;
};

class RemoteLoaderTest : public ::testing::Test {
 protected:
  RemoteLoaderTest() {
    // 256 shards: the cache's working set (the live window, the lookahead, the prefetch
    // horizon) is small beside half the dataset, as in a real one. With 24 shards the
    // simulation itself gives next-use 1.1-1.26x the floor (bench/remote/cache_simulation).
    testing::write_labelled_dataset(dir_.path() + "/ds", 12800, 10, 2048);
    manifest_ = Manifest::load(dir_.path() + "/ds").value_or_throw();
    for (const ShardInfo& info : manifest_.shards) dataset_bytes_ += info.bytes;
  }

  std::shared_ptr<const Dataset> remote(uint64_t budget, EvictionPolicy policy, int downloaders) {
    auto cache = ShardCache::open(dir_.path() + "/cache-" + std::to_string(caches_++), budget)
                     .value_or_throw();
    DatasetCache ds = cache->dataset("0d", "s3://b/ds", manifest_).value_or_throw();
    ShardDownload download = [this](const ShardInfo& info, int fd, const std::function<bool()>&) {
      const std::string bytes = read_file(dir_.path() + "/ds/" + info.file).value();
      {
        std::lock_guard<std::mutex> lock(downloaded_.mutex);
        downloaded_.bytes += bytes.size();
      }
      return ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())
                 ? Status::ok()
                 : io_error("pwrite failed");
    };
    RemoteSourceOptions options;
    options.policy = policy;
    options.downloaders = downloaders;
    // A fixed horizon: these tests measure eviction, and the tuned one follows the timing (on
    // a loaded machine under a sanitizer, deeper at times: up to 1.04x the floor, not 1.02x).
    options.prefetch_shards = 4;
    return Dataset::open(
               RemoteShardSource::create(manifest_, "s3://b/ds", std::move(ds), download, options))
        .value_or_throw();
  }

  uint64_t downloaded() {
    std::lock_guard<std::mutex> lock(downloaded_.mutex);
    return downloaded_.bytes;
  }

  static LoaderOptions options(int workers) {
    LoaderOptions o;
    o.batch_size = 32;
    o.workers = workers;
    o.prefetch = 2;
    o.seed = 5;
    o.shuffle_window = 3;
    return o;
  }

  // Labels of every sample of epoch e, in order.
  static std::vector<int64_t> labels(LoaderCore& loader, int64_t e) {
    std::vector<int64_t> out;
    LoaderCore::Epoch epoch = loader.epoch(e);
    HostBatch b;
    while (epoch.next(b)) {
      const auto* l = static_cast<const int64_t*>(b["label"].data);
      out.insert(out.end(), l, l + b.size);
    }
    return out;
  }

  testing::TempDir dir_;
  Manifest manifest_;
  uint64_t dataset_bytes_ = 0;
  int caches_ = 0;
  Counted downloaded_;
};

// Batches equal the local dataset's, for 0 workers (inline, deterministic) and 2.
TEST_F(RemoteLoaderTest, BatchesAreTheLocalDatasetsWithACacheOfHalfOfIt) {
  for (int workers : {0, 2}) {
    auto local = Dataset::open(dir_.path() + "/ds").value_or_throw();
    LoaderCore from_disk(local, options(workers));
    LoaderCore from_cache(remote(dataset_bytes_ / 2, EvictionPolicy::kNextUse, 2),
                          options(workers));
    for (int64_t e = 0; e < 2; ++e) {
      EXPECT_EQ(labels(from_cache, e), labels(from_disk, e)) << workers << " workers, epoch " << e;
    }
  }
}

// Small batches built up to 64 ahead (the auto prefetch) pin shards past the live window, more
// than a budget just over the floor holds beside it: the pieces ahead wait for room instead of
// failing (which they did, in the first epoch, before they waited).
TEST_F(RemoteLoaderTest, SmallBatchesFarAheadRunInABudgetJustOverTheFloor) {
  LoaderOptions o = options(2);
  o.batch_size = 16;
  o.prefetch = kAutoPrefetch;
  o.shuffle_window = 2;
  const uint64_t budget = remote::cache_floor(manifest_, o.shuffle_window).bytes;
  auto local = Dataset::open(dir_.path() + "/ds").value_or_throw();
  LoaderCore from_disk(local, o);
  LoaderCore from_cache(remote(budget, EvictionPolicy::kNextUse, 2), o);
  EXPECT_GT(from_cache.options().prefetch, 32);
  for (int64_t e = 0; e < 2; ++e) EXPECT_EQ(labels(from_cache, e), labels(from_disk, e)) << e;
}

// The target, with the real loader: a cache of half the dataset downloads, in each
// epoch after the first, at most 1.05x the floor (the dataset less the cache).
TEST_F(RemoteLoaderTest, NextUseDownloadsAboutTheFloorEachEpoch) {
  const uint64_t budget = dataset_bytes_ / 2;
  const uint64_t floor = dataset_bytes_ - budget;
  LoaderCore loader(remote(budget, EvictionPolicy::kNextUse, 2), options(2));
  labels(loader, 0);
  EXPECT_GE(downloaded(), dataset_bytes_);
  for (int64_t e = 1; e < 4; ++e) {
    const uint64_t before = downloaded();
    labels(loader, e);
    const double ratio = double(downloaded() - before) / double(floor);
    RecordProperty("next_use_epoch_" + std::to_string(e), std::to_string(ratio));
    EXPECT_GE(ratio, 0.99) << "epoch " << e;
    EXPECT_LE(ratio, 1.05) << "epoch " << e;
  }
}

// The comparison: LRU, the same cache and order, downloads far more (the simulation: ~1.7x).
TEST_F(RemoteLoaderTest, LruDownloadsFarMoreThanTheFloor) {
  const uint64_t budget = dataset_bytes_ / 2;
  const uint64_t floor = dataset_bytes_ - budget;
  LoaderCore loader(remote(budget, EvictionPolicy::kLru, 2), options(2));
  labels(loader, 0);
  const uint64_t before = downloaded();
  for (int64_t e = 1; e < 4; ++e) labels(loader, e);
  const double ratio = double(downloaded() - before) / double(3 * floor);
  RecordProperty("lru_epochs_1_3", std::to_string(ratio));
  EXPECT_GE(ratio, 1.3);
}

// A server whose `slow` object trickles in (32 KiB/s: far longer than the test, never slow
// enough to stall) and whose other objects are `files`' (by path), sent at once; a HEAD gets
// an object's size.
class TricklingServer {
 public:
  TricklingServer(std::map<std::string, std::string> files, std::string slow, uint64_t slow_bytes)
      : files_(std::move(files)),
        slow_(std::move(slow)),
        server_([this, slow_bytes](const testing::HostileRequest& request) {
          const size_t path_at = request.line.find(' ') + 1;
          const std::string path =
              request.line.substr(path_at, request.line.find(' ', path_at) - path_at);
          const bool head = request.line.rfind("HEAD ", 0) == 0;
          if (path == slow_) {
            const std::string body(slow_bytes, '\0');
            if (head)
              return testing::HostileResponse{
                  "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(slow_bytes) +
                  "\r\nETag: \"s\"\r\nConnection: close\r\n\r\n"};
            return testing::HostileResponse{
                testing::http_response("200 OK", "ETag: \"s\"\r\n", body), 1024,
                std::chrono::milliseconds(30)};
          }
          const auto found = files_.find(path);
          if (found == files_.end())
            return testing::HostileResponse{testing::http_response("404 Not Found", "", "")};
          return testing::HostileResponse{testing::http_response("200 OK", "", found->second)};
        }) {}
  std::string url(const std::string& path) const { return server_.url() + path; }
  // Waits (60 s at most: a guard against a hang) for `done`.
  static bool wait_for(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  }
  // Whether the slow object was asked for with a GET.
  bool slow_asked() const {
    for (const std::string& line : server_.requests())
      if (line.rfind("GET " + slow_ + " ", 0) == 0) return true;
    return false;
  }
  const testing::HostileHttpServer& server() const { return server_; }

 private:
  const std::map<std::string, std::string> files_;
  const std::string slow_;
  testing::HostileHttpServer server_;
};

// Opens `url` (as `kind`), starts an epoch on `workers` workers, and once the trickling object
// is asked for, lets the loader and the dataset go: their transfers end (the client goes away
// from the response), not the trickle (minutes).
void expect_stopping_ends_the_transfer(const TricklingServer& server, const std::string& url,
                                       const std::string& kind, int workers,
                                       const std::string& cache_dir) {
  DataAccessOptions access;
  access.cache_dir = cache_dir;
  {
    std::shared_ptr<const Dataset> dataset =
        remote::open_dataset(url, access, /*shuffle_window=*/1, kind).value_or_throw();
    LoaderOptions options;
    options.batch_size = 4;
    options.workers = workers;
    LoaderCore loader(dataset, options);
    LoaderCore::Epoch epoch = loader.epoch(0);
    ASSERT_TRUE(TricklingServer::wait_for([&] { return server.slow_asked(); }));
  }
  EXPECT_TRUE(TricklingServer::wait_for([&] { return server.server().abandoned() >= 1; }))
      << "the transfer was not ended by stopping the loader";
}

// A stoker dataset over HTTP: its shard trickles in; one worker (deterministic), then two.
TEST(RemoteLoaderStop, StoppingTheLoaderEndsAShardsTransfer) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir.path() + "/ds", 64, 4);
  const Manifest manifest = Manifest::load(dir.path() + "/ds").value_or_throw();
  ASSERT_EQ(manifest.shards.size(), 1u);
  for (int workers : {1, 2}) {
    SCOPED_TRACE(workers);
    // The manifest says the shard is 8 MiB: its bytes never come in full anyway.
    Manifest big = manifest;
    big.shards[0].bytes = uint64_t{8} << 20;
    TricklingServer server({{"/ds/manifest.json", big.to_json()}}, "/ds/" + manifest.shards[0].file,
                           big.shards[0].bytes);
    expect_stopping_ends_the_transfer(server, server.url("/ds"), "auto", workers,
                                      dir.path() + "/cache-" + std::to_string(workers));
  }
}

// An image folder over HTTP (files read in place): its image trickles in.
TEST(RemoteLoaderStop, StoppingTheLoaderEndsAnImagesTransfer) {
  testing::TempDir dir;
  for (int workers : {1, 2}) {
    SCOPED_TRACE(workers);
    TricklingServer server({{"/folder/", "<a href=\"cat/\">cat/</a>"},
                            {"/folder/cat/", "<a href=\"a.jpg\">a.jpg</a>"}},
                           "/folder/cat/a.jpg", uint64_t{8} << 20);
    expect_stopping_ends_the_transfer(server, server.url("/folder/"), "imagefolder", workers,
                                      dir.path() + "/cache-" + std::to_string(workers));
  }
}

}  // namespace
}  // namespace stoker
