// WebDataset tars over HTTP through the shard cache (remote_files.h), on nginx on loopback:
// the records are the local tars' records; a later run reads the index and the tars from the
// cache (no GET); a tar changed on the server between runs is indexed again and read as it is
// now; a missing tar, or one whose download comes short of the size listed (a hostile server),
// is one line naming its URL, its secrets cut out, and nothing of it is kept. The horizon of
// files fetched ahead: chosen from given bandwidth and pace figures (ahead_horizon), and over a
// loopback server, shallow for a slow reader on a fast link, deep for a fast reader on a slow
// one, as the reader's units per second and the downloads' time set it (counts, not rates).
#include "stoker/access/remote_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "stoker/access/data_source.h"
#include "stoker/store/shard_schedule.h"
#include "stoker/testing/dataset_records.h"
#include "stoker/testing/hostile_http_server.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/tar_fixtures.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"

namespace stoker::remote {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTarSecret = "SENTINEL-remote-tars-81c2";

// nginx serving ROOT/tars/d-{0..2}.tar.
class RemoteFilesTest : public testing::ServerSuite<RemoteFilesTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    fs::create_directories(root() + "/tars");
    for (int t = 0; t < 3; ++t) write_tar(t);
    server_ = std::make_unique<testing::LoopbackServer>(
        testing::LoopbackServer::nginx(root(), *dir_ / "nginx"));
  }
  void SetUp() override {
    ServerSuite::SetUp();
    if (IsSkipped()) return;
    access_.cache_dir = cache_.path() + "/cache";
  }
  // Tar t: samples t*10 .. t*10+3, JPEGs of a size that `grow` changes, labels 0..3; its
  // time moved `later` seconds on, so that nginx's ETag (time and size) tells versions apart.
  static void write_tar(int t, int grow = 0, int later = 0) {
    std::vector<tar_fixtures::Member> members;
    for (int s = 0; s < 4; ++s) {
      const std::string key = "k" + std::to_string(t * 10 + s);
      image::testing::JpegSpec jpeg;
      jpeg.width = 8 + t * 4 + s + grow;
      jpeg.height = 6 + s;
      const std::vector<uint8_t> bytes = image::testing::encode_jpeg(jpeg);
      members.push_back({key + ".jpg", std::string(bytes.begin(), bytes.end())});
      members.push_back({key + ".cls", std::to_string(s)});
    }
    const std::string path = root() + "/tars/d-" + std::to_string(t) + ".tar";
    tar_fixtures::write_tar(path, members);
    fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(later));
  }
  static std::string root() { return *dir_ / "root"; }
  static std::string url(const std::string& path) { return server_->url() + "/" + path; }
  // The tar GETs in nginx's access log since the suite began.
  static int tar_gets() {
    std::ifstream log(*dir_ / "nginx/access.log");
    int gets = 0;
    for (std::string line; std::getline(log, line);) gets += line.rfind("GET /tars/", 0) == 0;
    return gets;
  }
  Result<std::shared_ptr<const Dataset>> open(const std::string& spec,
                                              const std::string& kind = "auto") {
    return open_dataset(spec, access_, kShardByShard, kind);
  }

  testing::TempDir cache_;
  DataAccessOptions access_;
};

TEST_F(RemoteFilesTest, RecordsAreTheLocalTarsAndALaterRunReadsTheCache) {
  const std::vector<std::string> local = testing::all_records(
      *open_dataset(root() + "/tars/d-{0..2}.tar", access_, kShardByShard, "webdataset")
           .value_or_throw());
  ASSERT_EQ(local.size(), 12u);
  const int before = tar_gets();
  {
    auto remote = open(url("tars/d-{0..2}.tar")).value_or_throw();
    EXPECT_NE(remote->describe().find(url("tars/d-{0..2}.tar")), std::string::npos);
    EXPECT_EQ(testing::all_records(*remote), local);
  }
  EXPECT_EQ(tar_gets() - before, 3) << "each tar downloaded once, to index and read it";
  // A list of URLs names the same tars; the cache already holds them and their indexes.
  auto again =
      open(url("tars/d-0.tar") + "\n" + url("tars/d-{1,2}.tar"), "webdataset").value_or_throw();
  EXPECT_EQ(testing::all_records(*again), local);
  EXPECT_EQ(tar_gets() - before, 3) << "a later run reads the cache";
}

TEST_F(RemoteFilesTest, LoadersSharingTheCacheDownloadEachTarOnce) {
  const std::string spec = url("tars/d-{0..2}.tar");
  const int before = tar_gets();
  // Each open is a cache of its own (its own flocks, as another process's would be).
  std::vector<std::thread> loaders;
  std::vector<std::vector<std::string>> records(4);
  for (auto& read : records)
    loaders.emplace_back([&] { read = testing::all_records(*open(spec).value_or_throw()); });
  for (std::thread& loader : loaders) loader.join();
  EXPECT_EQ(tar_gets() - before, 3) << "one download per tar for all of them";
  for (const auto& read : records) EXPECT_EQ(read, records[0]);
  EXPECT_EQ(records[0].size(), 12u);
}

TEST_F(RemoteFilesTest, TarsAreDownloadedAheadInTheLoadersOrder) {
  const std::string spec = url("tars/d-{0..2}.tar");
  open(spec).value_or_throw();  // each tar downloaded and indexed
  // The copies gone from the cache (evicted), their indexes kept: opening downloads nothing.
  std::vector<fs::path> copies;
  for (const auto& entry :
       fs::directory_iterator(access_.cache_dir + "/" + kObjectsKey + "/shards"))
    copies.push_back(entry.path());
  ASSERT_EQ(copies.size(), 3u);
  for (const fs::path& copy : copies) fs::remove(copy);
  auto dataset = open(spec).value_or_throw();
  const int before = tar_gets();
  // The loader's plan: tar 1's samples first, then tar 2's, then tar 0's.
  ShardSchedule plan;
  plan.epoch_size = 12;
  plan.now = {{8, 11}, {0, 3}, {4, 7}};
  plan.after = plan.now;
  dataset->advise(plan, 0);
  for (int waited = 0; tar_gets() - before < 3 && waited < 1000; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(tar_gets() - before, 3) << "all three downloaded before any was pinned";
  // Two downloads at once: tar 0, needed last, starts only when one of the others is done.
  std::ifstream log(*dir_ / "nginx/access.log");
  std::vector<std::string> gets;
  for (std::string line; std::getline(log, line);)
    if (line.rfind("GET /tars/", 0) == 0) gets.push_back(line);
  EXPECT_EQ(gets[before].find("GET /tars/d-0.tar"), std::string::npos) << gets[before];
  const std::vector<std::string> local = testing::all_records(
      *open_dataset(root() + "/tars/d-{0..2}.tar", access_, kShardByShard, "webdataset")
           .value_or_throw());
  EXPECT_EQ(testing::all_records(*dataset), local);
  EXPECT_EQ(tar_gets() - before, 3) << "the reader found every tar in the cache";
}

TEST_F(RemoteFilesTest, ATarChangedOnTheServerIsIndexedAgainAndReadAsItIsNow) {
  const std::string spec = url("tars/d-{0..2}.tar");
  const std::vector<std::string> first = testing::all_records(*open(spec).value_or_throw());
  write_tar(1, /*grow=*/5, /*later=*/10);
  const std::vector<std::string> now = testing::all_records(*open(spec).value_or_throw());
  const std::vector<std::string> local = testing::all_records(
      *open_dataset(root() + "/tars/d-{0..2}.tar", access_, kShardByShard, "webdataset")
           .value_or_throw());
  EXPECT_EQ(now, local);
  EXPECT_NE(now, first);
  write_tar(1, /*grow=*/0, /*later=*/20);
}

TEST_F(RemoteFilesTest, AMissingTarIsOneLineNamingItsUrlWithoutItsSecrets) {
  const std::string spec = url("tars/d-{0..3}.tar") + "?token=" + kTarSecret;
  const Status status = open(spec).status();
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status.message();
  EXPECT_NE(status.message().find(url("tars/d-3.tar")), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find(kTarSecret), std::string::npos) << status.message();
}

// An http:// folder is listed from its index page (nginx's autoindex, HTML or JSON): the same
// tars, in the same order, as the brace pattern names.
TEST_F(RemoteFilesTest, AFolderIsListedFromItsIndexPage) {
  const std::vector<std::string> named =
      testing::all_records(*open(url("tars/d-{0..2}.tar")).value_or_throw());
  ASSERT_EQ(named.size(), 12u);
  for (const char* index : {"_index", "_index_json"}) {
    auto listed = open(url(std::string(index) + "/tars/"), "webdataset").value_or_throw();
    EXPECT_EQ(testing::all_records(*listed), named) << index;
  }
}

// A folder whose index page links to no tar, or that has no index page (nginx's 403 without
// autoindex), is one line naming its URL without its secrets.
TEST_F(RemoteFilesTest, AFolderWithoutTarsIsOneLineNamingItsUrl) {
  const Status none = open(url("_index/"), "webdataset").status();
  EXPECT_EQ(none.code(), StatusCode::kNotFound) << none.message();
  EXPECT_EQ(none.message(), url("_index") +
                                "/: no .tar files in this folder (its index page "
                                "links to none)");
  const Status unlisted = open(url("tars/"), "webdataset").status();
  EXPECT_FALSE(unlisted.is_ok());
  EXPECT_NE(unlisted.message().find(url("tars/")), std::string::npos) << unlisted.message();
  EXPECT_EQ(unlisted.message().find('\n'), std::string::npos) << unlisted.message();
}

TEST(HostileRemoteFilesTest, ADownloadShortOfTheListedSizeIsOneLineAndNothingIsKept) {
  testing::TempDir tmp;
  tar_fixtures::write_tar(tmp / "t.tar", {{"a.jpg", std::string(3000, 'a')}, {"a.cls", "1"}});
  const std::string tar = tar_fixtures::file_bytes(tmp / "t.tar");
  // HEAD lists the whole tar; GET sends its first half, as a whole response.
  testing::HostileHttpServer server([&](const testing::HostileRequest& r) {
    if (r.line.rfind("HEAD /t.tar", 0) == 0)
      return testing::HostileResponse{
          "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(tar.size()) +
          "\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n"};
    if (r.line.rfind("GET /t.tar", 0) == 0)
      return testing::HostileResponse{
          testing::http_response("200 OK", "ETag: \"v1\"\r\n", tar.substr(0, tar.size() / 2))};
    return testing::HostileResponse{testing::http_response("404 Not Found", "", "")};
  });
  DataAccessOptions access;
  access.cache_dir = tmp / "cache";
  const Status status =
      open_dataset(server.url() + "/t.tar?sig=" + kTarSecret, access, kShardByShard, "auto")
          .status();
  EXPECT_EQ(status.code(), StatusCode::kCorrupt) << status.message();
  EXPECT_EQ(status.message().rfind(server.url() + "/t.tar: ", 0), 0u) << status.message();
  EXPECT_NE(status.message().find("nothing was kept"), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find(kTarSecret), std::string::npos) << status.message();
  for (const auto& entry : fs::recursive_directory_iterator(tmp / "cache"))
    EXPECT_NE(entry.path().extension(), ".part") << entry.path();
}

TEST(AheadHorizonTest, FixedOrTunedFromTheBandwidthAndThePace) {
  // Units of 8 MB; `download_s`: one's download time; `read_s`: the reader's time per unit.
  const auto measured = [](double download_s, double read_s, int max_streams = 8) {
    PrefetchMeter meter;
    meter.downloaded(8e6, download_s);
    meter.moved(0, 0);
    meter.moved(10, static_cast<int64_t>(10 * read_s * 1e9));
    return meter.inputs(8e6, 1, max_streams);
  };
  RemoteFilesOptions fixed;
  fixed.units_ahead = 5;
  const AheadHorizon given = ahead_horizon(fixed, measured(10, 0.1));
  EXPECT_EQ(given.units, 5);
  EXPECT_EQ(given.streams, RemoteFiles::kAheadDownloads);
  const RemoteFilesOptions tuned;
  const AheadHorizon unmeasured = ahead_horizon(tuned, PrefetchInputs());
  EXPECT_EQ(unmeasured.units, 4) << "as the fixed horizon was";
  EXPECT_EQ(unmeasured.streams, 2);
  // A slow reader on a fast link: prefetch_depth's 2, raised to the fixed horizon's 4.
  const AheadHorizon slow_reader = ahead_horizon(tuned, measured(0.01, 1));
  EXPECT_EQ(slow_reader.units, 4);
  EXPECT_EQ(slow_reader.streams, 2);
  // A fast reader on a slow link: 1 + 1.5 x 2 s / 0.25 s units, on 1.5 x 8 streams' worth.
  const AheadHorizon fast_reader = ahead_horizon(tuned, measured(2, 0.25));
  EXPECT_EQ(fast_reader.units, 13);
  EXPECT_EQ(fast_reader.streams, 8);
  EXPECT_GT(fast_reader.units, slow_reader.units);
  // Never more streams than the cache's budget fits, never fewer units than streams.
  const AheadHorizon bounded = ahead_horizon(tuned, measured(2, 0.25, /*max_streams=*/3));
  EXPECT_EQ(bounded.streams, 3);
  EXPECT_EQ(bounded.units, 13);
  const AheadHorizon one = ahead_horizon(tuned, measured(0.01, 1, /*max_streams=*/1));
  EXPECT_EQ(one.streams, 1);
  EXPECT_EQ(one.units, 4);
  // 1 + 1.5 x 1.2 s / 0.5 s = 5 units, past the floor.
  EXPECT_EQ(ahead_horizon(tuned, measured(1.2, 0.5)).units, 5);
}

// kFiles files f-N.tar (their bytes are not read as tars here) on a loopback server that sends
// each GET in chunks `pause_ms` apart; a reader reads them in order, one every `read_ms`,
// naming those after the one it read to fetch_ahead, as a source does.
class AheadOverLoopback {
 public:
  static constexpr int kFiles = 24;
  explicit AheadOverLoopback(int pause_ms)
      : body_(4000, 'x'), server_([this, pause_ms](const testing::HostileRequest& r) {
          const bool head = r.line.rfind("HEAD /", 0) == 0;
          int file = -1;
          if (std::sscanf(r.line.c_str(), head ? "HEAD /f-%d.tar" : "GET /f-%d.tar", &file) != 1)
            return testing::HostileResponse{testing::http_response("404 Not Found", "", "")};
          if (head)
            return testing::HostileResponse{
                "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body_.size()) +
                "\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n"};
          // How far past the unit the reader read last this GET is, once the reader has read
          // three (the figures measured by then).
          const int read = last_read_.load();
          if (read >= 3) {
            const int ahead = file - read;
            for (int most = most_ahead_.load(); ahead > most;)
              if (most_ahead_.compare_exchange_weak(most, ahead)) break;
          }
          return testing::HostileResponse{
              testing::http_response("200 OK", "ETag: \"v1\"\r\n", body_),
              pause_ms > 0 ? body_.size() / 10 : 0, std::chrono::milliseconds(pause_ms)};
        }) {}

  // Reads the first `count` files in order through a cache of their own, a unit every
  // `read_ms`; the horizon at the end.
  AheadHorizon read(int count, const RemoteFilesOptions& options, int read_ms) {
    testing::TempDir cache_dir;
    auto cache = ShardCache::open(cache_dir / "cache", 1 << 30).value_or_throw();
    char last[16];
    std::snprintf(last, sizeof last, "%d", kFiles - 1);
    auto files =
        RemoteFiles::open(server_.url() + "/f-{0.." + last + "}.tar", ".tar", cache, options)
            .value_or_throw();
    for (int f = 0; f < count; ++f) {
      files->plan([](size_t file) { return static_cast<int64_t>(file); }, f);
      EXPECT_TRUE(files->open(static_cast<size_t>(f), nullptr).is_ok()) << f;
      last_read_ = f;
      std::vector<size_t> next;
      for (int g = f + 1; g < count; ++g) next.push_back(static_cast<size_t>(g));
      files->fetch_ahead(next);
      std::this_thread::sleep_for(std::chrono::milliseconds(read_ms));
    }
    return files->horizon(/*pieces=*/false);
  }
  // The most units past the reader's last that a GET asked for.
  int most_ahead() const { return most_ahead_.load(); }

 private:
  const std::string body_;
  std::atomic<int> last_read_{-1};
  std::atomic<int> most_ahead_{0};
  testing::HostileHttpServer server_;
};

TEST(RemoteFilesAheadTest, ASlowReaderOnAFastLinkFetchesNoFartherThanTheFixedHorizon) {
  // A unit every 0.4 s, downloads of a moment: prefetch_depth's two, raised to four (a
  // download taking up to about 0.8 s, as on a loaded machine, keeps it there).
  AheadOverLoopback link(/*pause_ms=*/0);
  const AheadHorizon tuned = link.read(12, RemoteFilesOptions(), /*read_ms=*/400);
  EXPECT_EQ(tuned.units, 4);
  EXPECT_EQ(tuned.streams, 2);
  EXPECT_LE(link.most_ahead(), 4);
  EXPECT_GE(link.most_ahead(), 1);
}

TEST(RemoteFilesAheadTest, AFastReaderOnASlowLinkFetchesFartherAheadOnMoreDownloads) {
  // Each download about 0.5 s (ten chunks 50 ms apart), a reader that waits for them: its pace
  // is the downloads', and each measurement asks for 1.5x the streams running, whatever the
  // machine's speed.
  AheadOverLoopback link(/*pause_ms=*/50);
  const AheadHorizon tuned =
      link.read(AheadOverLoopback::kFiles, RemoteFilesOptions(), /*read_ms=*/0);
  EXPECT_GT(tuned.streams, RemoteFiles::kAheadDownloads);
  EXPECT_GT(tuned.units, 4);
  EXPECT_GT(link.most_ahead(), 4) << "past the fixed horizon";
}

TEST(RemoteFilesAheadTest, AFixedHorizonStaysWhereItIsSet) {
  AheadOverLoopback link(/*pause_ms=*/50);
  RemoteFilesOptions fixed;
  fixed.units_ahead = 3;
  const AheadHorizon horizon = link.read(12, fixed, /*read_ms=*/0);
  EXPECT_EQ(horizon.units, 3);
  EXPECT_EQ(horizon.streams, RemoteFiles::kAheadDownloads);
  EXPECT_LE(link.most_ahead(), 3);
}

}  // namespace
}  // namespace stoker::remote
