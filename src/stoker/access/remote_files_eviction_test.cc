// Remote tars through a cache of about half of them, read by the real loader on nginx on
// loopback: next-use eviction (the loader's plan, InPlaceFiles::plan) downloads, in each epoch
// after the first, about the floor (the tars less those the cache holds), as for stoker's own
// shards (remote_loader_test.cc); least recently used, clearly more. Tars alike in size, so
// that downloads are counted as GETs in nginx's log.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stoker/access/data_source.h"
#include "stoker/access/remote_files.h"
#include "stoker/pipeline/loader_core.h"
#include "stoker/store/dataset.h"
#include "stoker/store/import/webdataset_source.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/tar_fixtures.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"

namespace stoker::remote {
namespace {

namespace fs = std::filesystem;

// 256 tars: the working set (the shuffle window's tars, those fetched ahead) is small beside
// half of them, as in a real dataset.
constexpr int kTars = 256;
constexpr int kSamples = 20;  // per tar

// nginx serving ROOT/tars/t-{000..255}.tar, copies of one tar.
class RemoteFilesEvictionTest : public testing::ServerSuite<RemoteFilesEvictionTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    fs::create_directories(root() + "/tars");
    std::vector<tar_fixtures::Member> members;
    for (int s = 0; s < kSamples; ++s) {
      image::testing::JpegSpec jpeg;
      jpeg.width = 8 + s;
      jpeg.height = 6;
      const std::vector<uint8_t> bytes = image::testing::encode_jpeg(jpeg);
      const std::string key = "k" + std::to_string(100 + s);
      members.push_back({key + ".jpg", std::string(bytes.begin(), bytes.end())});
      members.push_back({key + ".cls", std::to_string(s % 10)});
    }
    const std::string first = tar_path(0);
    tar_fixtures::write_tar(first, members);
    for (int t = 1; t < kTars; ++t) fs::copy_file(first, tar_path(t));
    tar_bytes_ = fs::file_size(first);
    start_nginx();
  }

  static std::string tar_path(int t) {
    char name[32];
    std::snprintf(name, sizeof(name), "/tars/t-%03d.tar", t);
    return root() + name;
  }
  static std::string spec() { return server_->url() + "/tars/t-{000..255}.tar"; }
  // The tar GETs in nginx's access log since the suite began.
  static int tar_gets() {
    std::ifstream log(*dir_ / "nginx/access.log");
    int gets = 0;
    for (std::string line; std::getline(log, line);) gets += line.rfind("GET /tars/", 0) == 0;
    return gets;
  }

  // The tars as every command opens them (open_dataset: two download threads ahead), through
  // a fresh cache of half of them.
  std::shared_ptr<const Dataset> open(EvictionPolicy policy) {
    DataAccessOptions access;
    access.cache_dir = cache_.path() + "/cache-" + std::to_string(caches_++);
    access.cache_gb = kTars / 2 * static_cast<double>(tar_bytes_) / 1e9;
    access.cache_policy = policy;
    return open_dataset(spec(), access, kShardByShard, "webdataset").value_or_throw();
  }

  // The same with nothing fetched ahead: every download is the reader's, in its order.
  std::shared_ptr<const Dataset> open_without_ahead(EvictionPolicy policy) {
    auto cache = ShardCache::open(cache_.path() + "/cache-" + std::to_string(caches_++),
                                  kTars / 2 * tar_bytes_)
                     .value_or_throw();
    WebDatasetSourceOptions options;
    options.index_cache_dir = cache->dir();
    auto files = RemoteFiles::open(spec(), ".tar", cache, {policy}).value_or_throw();
    return Dataset::open(WebDatasetSource::open(files, files->location(), options).value_or_throw())
        .value_or_throw();
  }

  static LoaderOptions options(int workers) {
    LoaderOptions o;
    o.workers = workers;
    o.batch_size = kSamples;  // a tar's samples; prefetch as the loader sets it
    o.seed = 5;
    o.shuffle_window = 3;
    return o;
  }

  // The tars downloaded in each of epochs 1 to 3, over the floor (half of them), after epoch 0.
  static std::vector<double> epochs_over_floor(LoaderCore& loader) {
    auto run = [&](int64_t e) {
      LoaderCore::Epoch epoch = loader.epoch(e);
      HostBatch batch;
      int64_t samples = 0;
      while (epoch.next(batch)) samples += batch.size;
      EXPECT_EQ(samples, kTars * kSamples) << "epoch " << e;
    };
    run(0);
    std::vector<double> ratios;
    for (int64_t e = 1; e < 4; ++e) {
      const int before = tar_gets();
      run(e);
      ratios.push_back(double(tar_gets() - before) / double(kTars - kTars / 2));
    }
    return ratios;
  }

  testing::TempDir cache_;
  int caches_ = 0;
  static inline uint64_t tar_bytes_ = 0;
};

TEST_F(RemoteFilesEvictionTest, NextUseDownloadsAboutTheFloorEachEpoch) {
  LoaderCore loader(open(EvictionPolicy::kNextUse), options(2));
  const std::vector<double> ratios = epochs_over_floor(loader);
  for (size_t e = 0; e < ratios.size(); ++e) {
    RecordProperty("next_use_epoch_" + std::to_string(e + 1), std::to_string(ratios[e]));
    EXPECT_GE(ratios[e], 0.99) << "epoch " << e + 1;
    EXPECT_LE(ratios[e], 1.05) << "epoch " << e + 1;
  }
}

// The comparison: the same cache and order given up least recently used.
TEST_F(RemoteFilesEvictionTest, LruDownloadsFarMoreThanTheFloor) {
  LoaderCore loader(open(EvictionPolicy::kLru), options(2));
  const std::vector<double> ratios = epochs_over_floor(loader);
  const double mean = (ratios[0] + ratios[1] + ratios[2]) / 3;
  RecordProperty("lru_epochs_1_3", std::to_string(mean));
  EXPECT_GE(mean, 1.3);
}

// One thread, nothing ahead: the reader's downloads alone, the same in every run. (In one
// thread a fixed choice of victims, as the cache made without a plan, is near the floor too:
// the test above is the one that tells the plan apart.)
TEST_F(RemoteFilesEvictionTest, OneThreadNextUseIsAboutTheFloorAndTheSameInEveryRun) {
  LoaderCore first(open_without_ahead(EvictionPolicy::kNextUse), options(0));
  const std::vector<double> ratios = epochs_over_floor(first);
  for (double ratio : ratios) {
    EXPECT_GE(ratio, 0.99);
    EXPECT_LE(ratio, 1.05);
  }
  LoaderCore again(open_without_ahead(EvictionPolicy::kNextUse), options(0));
  EXPECT_EQ(epochs_over_floor(again), ratios);
}

}  // namespace
}  // namespace stoker::remote
