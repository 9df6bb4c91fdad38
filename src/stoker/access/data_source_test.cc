#include "stoker/access/data_source.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "stoker/net/object_store.h"
#include "stoker/testing/dataset_records.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker::remote {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSentinel = "SENTINEL-data-source-5d1e";

void expect_one_line(const Status& status, const std::string& starts) {
  EXPECT_FALSE(status.is_ok());
  EXPECT_EQ(status.message().rfind(starts, 0), 0u) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
}

// Every file under `dir` as one string.
std::string contents_of(const std::string& dir) {
  std::string all;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    all += std::string(std::istreambuf_iterator<char>(in), {});
  }
  return all;
}

TEST(CacheFloorTest, NamesTheBudgetTheWindowItsShardsAndTheLargestWindowThatFits) {
  Manifest m;
  for (int s = 0; s < 20; ++s) m.shards.push_back({"s" + std::to_string(s), 100, 1'000'000'000, 0});
  m.records = 2000;
  DataAccessOptions access;
  access.cache_gb = 2;
  EXPECT_EQ(check_cache_floor(m, 2'000'000'000, access, 8, "s3://b/ds").message(),
            "s3://b/ds: --cache-gb 2 holds fewer than the 9 shards (9.0 GB) that --shuffle-window "
            "8 needs at once; raise --cache-gb or lower --shuffle-window (1 fits)");
  EXPECT_TRUE(check_cache_floor(m, 2'000'000'000, access, 1, "s3://b/ds").is_ok());
  access.cache_gb = 0;
  EXPECT_EQ(check_cache_floor(m, 19'500'000'000, access, 0, "s3://b/ds").message(),
            "s3://b/ds: the default --cache-gb 19.5 (half the cache disk's free space) holds "
            "fewer than the 20 shards (20.0 GB) that --shuffle-window all needs at once; raise "
            "--cache-gb or lower --shuffle-window (18 fits)");
  EXPECT_EQ(check_cache_floor(m, 1'500'000'000, access, kShardByShard, "s3://b/ds").message(),
            "s3://b/ds: the default --cache-gb 1.5 (half the cache disk's free space) holds fewer "
            "than the 2 shards (2.0 GB) that reading it needs at once; raise --cache-gb");
  // Under 1 GB in MB, not "0.0 GB".
  Manifest small;
  for (int s = 0; s < 4; ++s) small.shards.push_back({"s" + std::to_string(s), 100, 4'200'000, 0});
  small.records = 400;
  access.cache_gb = 0.01;
  EXPECT_NE(check_cache_floor(small, 5'000'000, access, kShardByShard, "s3://b/ds")
                .message()
                .find("fewer than the 2 shards (8.4 MB)"),
            std::string::npos);
}

// Shards of unequal size: the floor is the sum of the largest, whatever their order.
TEST(CacheFloorTest, SumsTheLargestShardsTheWindowHoldsAtOnce) {
  Manifest m;
  const uint64_t bytes[] = {5, 70, 20, 900, 3, 40, 600, 8};
  for (uint64_t b : bytes) m.shards.push_back({"s" + std::to_string(b), 100, b, 0});
  m.records = 800;
  const CacheFloor window_one = cache_floor(m, 1);  // one shard read at once, one in flight
  EXPECT_EQ(window_one.shards, 2u);
  EXPECT_EQ(window_one.bytes, 900u + 600u);
  const CacheFloor window_three = cache_floor(m, 3);
  EXPECT_EQ(window_three.shards, 4u);
  EXPECT_EQ(window_three.bytes, 900u + 600u + 70u + 40u);
  EXPECT_EQ(cache_floor(m, kShardByShard).bytes, 900u + 600u);
  const CacheFloor all = cache_floor(m, 0);
  EXPECT_EQ(all.shards, 8u);
  EXPECT_EQ(all.bytes, 5u + 70 + 20 + 900 + 3 + 40 + 600 + 8);
  for (const CacheFloor& floor : {window_one, window_three, all})
    EXPECT_EQ(floor.largest_shard, 900u);
}

// A dataset of no records reads no shard through a window (and so once needed a division by
// zero); shard by shard it still holds two, whole dataset all.
TEST(CacheFloorTest, ADatasetOfNoRecordsNeedsNoRoomForAWindow) {
  Manifest empty_shards;
  empty_shards.shards = {{"a", 0, 64, 0}, {"b", 0, 32, 0}, {"c", 0, 16, 0}};
  for (const int64_t window : {1, 4}) {
    EXPECT_EQ(cache_floor(Manifest{}, window).bytes, 0u);
    EXPECT_EQ(cache_floor(empty_shards, window).bytes, 0u);
  }
  EXPECT_EQ(cache_floor(empty_shards, kShardByShard).bytes, 64u + 32u);
  EXPECT_EQ(cache_floor(empty_shards, 0).bytes, 64u + 32u + 16u);
  EXPECT_EQ(cache_floor(empty_shards, 1).largest_shard, 64u);
}

TEST(LocateTest, ALocalPathIsLocatedAsBefore) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "ds", 10);
  DataLocation where = locate(dir / "ds").value_or_throw();
  EXPECT_FALSE(where.folder);
  EXPECT_EQ(where.train, dir / "ds");
}

TEST(LocateTest, ParquetFilesAreOneDatasetOrHuggingFacesSplits) {
  testing::TempDir dir;
  for (const char* name : {"hf/train-00000-of-00002.parquet", "hf/train-00001-of-00002.parquet",
                           "hf/validation-00000-of-00001.parquet", "one/part-0.parquet"}) {
    fs::create_directories(fs::path(dir / name).parent_path());
    std::ofstream(dir / name) << "PAR1";
  }
  const DataLocation splits = locate(dir / "hf").value_or_throw();
  EXPECT_TRUE(splits.folder);
  EXPECT_EQ(splits.train, dir / "hf/train-*.parquet");
  EXPECT_EQ(splits.eval, dir / "hf/validation-*.parquet");
  for (const std::string& path : {dir / "one", dir / "one/part-0.parquet", dir / "one/*.parquet"}) {
    const DataLocation one = locate(path).value_or_throw();
    EXPECT_FALSE(one.folder) << path;
    EXPECT_EQ(one.train, path);
  }
  // A URL ending in .parquet is one dataset, located without a request (its files are read
  // through the cache: remote_files_test.cc, python/tests/test_remote_sources.py).
  const DataLocation remote = locate("http://127.0.0.1:9/x.parquet?sig=s").value_or_throw();
  EXPECT_FALSE(remote.folder);
  EXPECT_EQ(remote.train, "http://127.0.0.1:9/x.parquet?sig=s");
  EXPECT_EQ(remote.path, "http://127.0.0.1:9/x.parquet");
}

// nginx serving ROOT/ds (one dataset) and ROOT/folder/{train,test}.
class HttpDataSourceTest : public testing::ServerSuite<HttpDataSourceTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    testing::write_labelled_dataset(root() + "/ds", 600, 10, 2048);
    testing::write_labelled_dataset(root() + "/folder/train", 200, 10, 2048);
    testing::write_labelled_dataset(root() + "/folder/test", 50, 10, 2048);
    server_ = std::make_unique<testing::LoopbackServer>(
        testing::LoopbackServer::nginx(root(), *dir_ / "nginx"));
  }
  void SetUp() override {
    ServerSuite::SetUp();
    if (IsSkipped()) return;
    access_.cache_dir = cache_.path() + "/cache";
  }
  static std::string root() { return *dir_ / "root"; }
  static std::string url(const std::string& path) { return server_->url() + "/" + path; }
  // The shard GETs in nginx's access log since the suite began.
  static int shard_gets(const std::string& dataset) {
    std::ifstream log(*dir_ / "nginx/access.log");
    int gets = 0;
    for (std::string line; std::getline(log, line);)
      gets += line.rfind("GET /" + dataset + "/shard", 0) == 0;
    return gets;
  }

  testing::TempDir cache_;
  DataAccessOptions access_;
};

TEST_F(HttpDataSourceTest, LocatesADatasetOrAFolderOfDatasetsOrSaysThereIsNone) {
  DataLocation one = locate(url("ds")).value_or_throw();
  EXPECT_FALSE(one.folder);
  EXPECT_EQ(one.train, url("ds"));
  DataLocation folder = locate(url("folder")).value_or_throw();
  EXPECT_TRUE(folder.folder);
  EXPECT_EQ(folder.train, url("folder/train"));
  EXPECT_EQ(folder.eval, url("folder/test"));
  EXPECT_EQ(describe_splits(folder), "test/, train/ of " + url("folder"));
  Result<DataLocation> none = locate(url("nothing"));
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  expect_one_line(none.status(), url("nothing") + ": neither a dataset (no manifest.json)");
}

// A folder listed by its index page holding Hugging Face's split files is located as a local
// one is (its Parquet files are read in remote_parquet_test.cc); without both splits it is
// neither a dataset nor a folder of them, as before.
TEST_F(HttpDataSourceTest, LocatesHuggingFacesSplitsInAListedFolder) {
  for (const char* name :
       {"hf/train-00000-of-00001.parquet", "hf/validation-00000-of-00001.parquet", "hf/notes.txt",
        "only/train-00000-of-00001.parquet", "only/other-0.parquet"}) {
    fs::create_directories(fs::path(root() + "/" + name).parent_path());
    std::ofstream(root() + "/" + name) << "PAR1";
  }
  const DataLocation splits = locate(url("_index/hf/")).value_or_throw();
  EXPECT_TRUE(splits.folder);
  EXPECT_EQ(splits.train, url("_index/hf/train-00000-of-00001.parquet"));
  EXPECT_EQ(splits.eval, url("_index/hf/validation-00000-of-00001.parquet"));
  EXPECT_EQ(splits.datasets, (std::vector<std::string>{splits.train, splits.eval}));
  Result<DataLocation> one_split = locate(url("_index/only/"));
  EXPECT_EQ(one_split.status().code(), StatusCode::kNotFound);
  expect_one_line(one_split.status(), url("_index/only") + ": neither a dataset");
  // Without an index page (nginx's 403) the folder is not listed.
  EXPECT_EQ(locate(url("hf/")).status().code(), StatusCode::kNotFound);
}

TEST_F(HttpDataSourceTest, ReadsTheLocalRecordsAndAWarmCacheDownloadsNothing) {
  const auto local = Dataset::open(root() + "/ds").value_or_throw();
  const int before = shard_gets("ds");
  {
    auto remote = open_dataset(url("ds"), access_, 4).value_or_throw();
    EXPECT_EQ(remote->dir(), url("ds"));
    EXPECT_TRUE(remote->needs_pins());
    EXPECT_EQ(testing::all_records(*remote), testing::all_records(*local));
    EXPECT_NE(
        remote->describe().find(url("ds") + " (" + std::to_string(local->num_shards()) + " shards"),
        std::string::npos)
        << remote->describe();
  }
  EXPECT_EQ(shard_gets("ds") - before, local->num_shards()) << "each shard downloaded once";
  auto again = open_dataset(url("ds"), access_, 4).value_or_throw();
  EXPECT_EQ(testing::all_records(*again), testing::all_records(*local));
  EXPECT_EQ(shard_gets("ds") - before, local->num_shards()) << "a warm cache downloads nothing";
  std::ifstream log(*dir_ / "nginx/access.log");
  const std::string requests(std::istreambuf_iterator<char>(log), {});
  EXPECT_NE(requests.find("GET /ds/manifest.json 304"), std::string::npos)
      << "the manifest asked for with the cached ETag";
}

TEST_F(HttpDataSourceTest, AnEditedManifestIsANewVersion) {
  testing::write_labelled_dataset(root() + "/edited", 100, 10, 2048);
  EXPECT_EQ(open_dataset(url("edited"), access_, 1).value_or_throw()->size(), 100u);
  EXPECT_EQ(open_dataset(url("edited"), access_, 1).value_or_throw()->size(), 100u);
  fs::remove_all(root() + "/edited");
  testing::write_labelled_dataset(root() + "/edited", 130, 10, 2048);
  auto edited = open_dataset(url("edited"), access_, 1).value_or_throw();
  EXPECT_EQ(edited->size(), 130u);
  EXPECT_EQ(testing::all_records(*edited),
            testing::all_records(*Dataset::open(root() + "/edited").value_or_throw()));
  const std::string key = parse_remote_url(url("edited")).value().cache_key();
  int versions = 0;
  for (const auto& entry : fs::directory_iterator(access_.cache_dir + "/" + key))
    versions += entry.path().filename().string().rfind("manifest-", 0) == 0;
  EXPECT_EQ(versions, 2);
}

TEST_F(HttpDataSourceTest, ABudgetUnderTheFloorIsOneLineBeforeAnyDownload) {
  const int before = shard_gets("ds");
  access_.cache_gb = 3e-6;  // 3000 bytes: a shard or so
  Result<std::shared_ptr<const Dataset>> opened = open_dataset(url("ds"), access_, 8);
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
  expect_one_line(opened.status(), url("ds") + ": --cache-gb 3e-06 holds fewer than the ");
  EXPECT_NE(opened.status().message().find("that --shuffle-window 8 needs at once"),
            std::string::npos);
  EXPECT_EQ(shard_gets("ds"), before);
}

TEST_F(HttpDataSourceTest, AShardMissingOnTheServerIsOneLineNamingItsUrl) {
  testing::write_labelled_dataset(root() + "/holed", 100, 10, 2048);
  const Manifest m = Manifest::load(root() + "/holed").value_or_throw();
  fs::remove(root() + "/holed/" + m.shards[1].file);
  auto remote = open_dataset(url("holed"), access_, 1).value_or_throw();
  Result<ShardPin> pin = const_cast<ShardSource&>(remote->source()).acquire(1, nullptr);
  EXPECT_EQ(pin.status().code(), StatusCode::kNotFound);
  expect_one_line(pin.status(), url("holed/" + m.shards[1].file) + ": HTTP 404");
}

// weed's S3 gateway holding ds/, uploaded by signed PUTs; keys in the process's environment.
class S3DataSourceTest : public testing::ServerSuite<S3DataSourceTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    server_ =
        std::make_unique<testing::LoopbackServer>(testing::LoopbackServer::s3(*dir_ / "weed"));
    if (!server_->skip_reason().empty()) return;
    testing::write_labelled_dataset(*dir_ / "ds", 400, 10, 2048);
    set_keys(server_->get("secret_key"));
    const RemoteUrl url = parse_remote_url(dataset_url()).value_or_throw();
    auto store =
        open_object_store(url, HttpClient::create().value_or_throw(), process_environment())
            .value_or_throw();
    for (const auto& entry : fs::directory_iterator(*dir_ / "ds"))
      throw_if_error(
          store->put_file(entry.path().filename().string(), entry.path().string()).status());
    clear_keys();
  }
  void SetUp() override {
    ServerSuite::SetUp();
    if (IsSkipped()) return;
    set_keys(server_->get("secret_key"));
    access_.cache_dir = cache_.path() + "/cache";
  }
  // The variables go with each test: servers started later (weed reads AWS_*) never see them.
  void TearDown() override { clear_keys(); }
  static void clear_keys() {
    for (const char* name :
         {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3", "AWS_REGION"})
      ::unsetenv(name);
  }
  static void set_keys(const std::string& secret) {
    ::setenv("AWS_ACCESS_KEY_ID", server_->get("access_key").c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", secret.c_str(), 1);
    ::setenv("AWS_ENDPOINT_URL_S3", server_->url().c_str(), 1);
    ::setenv("AWS_REGION", server_->get("region").c_str(), 1);
  }
  static std::string dataset_url() { return "s3://" + server_->get("bucket") + "/ds"; }

  testing::TempDir cache_;
  DataAccessOptions access_;
};

TEST_F(S3DataSourceTest, ReadsTheLocalRecords) {
  auto remote = open_dataset(dataset_url(), access_, 2).value_or_throw();
  EXPECT_EQ(testing::all_records(*remote),
            testing::all_records(*Dataset::open(*dir_ / "ds").value_or_throw()));
}

// An s3:// folder of Hugging Face's split files is located as a local one is.
TEST_F(S3DataSourceTest, LocatesHuggingFacesSplitsInAFolder) {
  const std::string folder = "s3://" + server_->get("bucket") + "/hf/";
  auto store = open_object_store(parse_remote_url(folder).value_or_throw(),
                                 HttpClient::create().value_or_throw(), process_environment())
                   .value_or_throw();
  for (const char* name : {"train-00000-of-00001.parquet", "test-00000-of-00001.parquet"})
    throw_if_error(store->put_bytes(name, "PAR1").status());
  const DataLocation splits = locate(folder).value_or_throw();
  EXPECT_TRUE(splits.folder);
  EXPECT_EQ(splits.train, folder + "train-00000-of-00001.parquet");
  EXPECT_EQ(splits.eval, folder + "test-00000-of-00001.parquet");
}

TEST_F(S3DataSourceTest, WrongKeysAreOneLine403NamingTheUrlAndNeverTheSecret) {
  set_keys(kSentinel);
  Result<DataLocation> where = locate(dataset_url());
  expect_one_line(where.status(), dataset_url() + "/manifest.json: HTTP 403");
  Result<std::shared_ptr<const Dataset>> opened = open_dataset(dataset_url(), access_, 2);
  expect_one_line(opened.status(), dataset_url() + "/manifest.json: HTTP 403");
  for (const Status& s : {where.status(), opened.status()})
    EXPECT_EQ(s.message().find(kSentinel), std::string::npos) << s.message();
  EXPECT_EQ(contents_of(access_.cache_dir).find(kSentinel), std::string::npos);
}

}  // namespace
}  // namespace stoker::remote
