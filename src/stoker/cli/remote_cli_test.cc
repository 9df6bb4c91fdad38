// The commands on datasets by URL (access/data_source.h): nginx serving a converted folder,
// weed's S3 gateway holding a dataset uploaded by signed PUTs. A run from a URL trains exactly
// as from the folder; inspect and verify read URLs; bad input is one line naming the URL; a
// sentinel secret appears in no output, log or cache file; a server gone mid-run is one line
// naming the URL once the retries are spent; a cache on a full disk evicts to make room, or
// stops with one line naming it, leaving nothing half-written. An image folder by URL: inspect,
// verify and bench loader read it, and a folder without classes is one line naming the URL.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "stoker/net/object_store.h"
#include "stoker/store/manifest.h"
#include "stoker/testing/classification.h"
#include "stoker/testing/cli_process.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::run;
using testing::RunResult;

constexpr const char* kSentinel = "SENTINEL-remote-cli-8c2b";

// The epoch records of log `path`.
std::vector<nlohmann::json> epoch_records(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("record", "") == "epoch") records.push_back(std::move(j));
  }
  return records;
}

// The train losses of log `path`'s epoch records.
std::vector<double> train_losses(const std::string& path) {
  std::vector<double> losses;
  for (const nlohmann::json& j : epoch_records(path))
    losses.push_back(j.at("train_loss").get<double>());
  return losses;
}

// Every file under `dir` as one string.
std::string contents_of(const std::string& dir) {
  std::string all;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    all += std::string(std::istreambuf_iterator<char>(in), {});
  }
  return all;
}

class RemoteCliTest : public testing::ServerSuite<RemoteCliTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    testing::write_rows_dataset(root() + "/data/train", 1200, 1);
    testing::write_rows_dataset(root() + "/data/test", 300, 2);
    server_ = std::make_unique<testing::LoopbackServer>(
        testing::LoopbackServer::nginx(root(), *dir_ / "nginx"));
  }
  static std::string root() { return *dir_ / "root"; }
  static std::string url(const std::string& path) { return server_->url() + "/" + path; }
  std::string cache() const { return " --cache-dir " + (tmp_ / "cache"); }
  static int shard_gets() {
    std::ifstream log(*dir_ / "nginx/access.log");
    int gets = 0;
    for (std::string line; std::getline(log, line);)
      gets += line.rfind("GET /data/", 0) == 0 && line.find(".stk ") != std::string::npos;
    return gets;
  }

  testing::TempDir tmp_;
};

TEST_F(RemoteCliTest, TrainingFromAUrlGivesTheLocalRunsLossesAndAWarmRunDownloadsNothing) {
  const std::string args = " --epochs 2 --batch 32 --seed 3 --shuffle-window 2 --log ";
  RunResult local = run("train --data " + root() + "/data" + args + (tmp_ / "local.jsonl"), tmp_);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const int before = shard_gets();
  RunResult remote =
      run("train --data " + url("data") + args + (tmp_ / "remote.jsonl") + cache(), tmp_);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_NE(remote.out.find("training mlp on " + url("data/train") + " ("), std::string::npos)
      << remote.out;
  EXPECT_NE(remote.out.find("evaluating on " + url("data/test")), std::string::npos);
  const std::vector<double> want = train_losses(tmp_ / "local.jsonl");
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(train_losses(tmp_ / "remote.jsonl"), want);
  const int downloads = shard_gets() - before;
  EXPECT_GT(downloads, 0);
  RunResult warm =
      run("train --data " + url("data") + args + (tmp_ / "warm.jsonl") + cache(), tmp_);
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(train_losses(tmp_ / "warm.jsonl"), want);
  EXPECT_EQ(shard_gets() - before, downloads) << "the warm cache downloaded nothing";
}

TEST_F(RemoteCliTest, InspectReadsTheManifestOnlyAndVerifyChecksEveryRecord) {
  const int before = shard_gets();
  RunResult inspect = run("inspect " + url("data") + " --json" + cache(), tmp_);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const nlohmann::json j = nlohmann::json::parse(inspect.out);
  EXPECT_EQ(j["dir"], url("data"));
  EXPECT_EQ(j["datasets"][1]["records"], 1200);
  EXPECT_FALSE(j["datasets"][1].contains("label_histogram"));
  EXPECT_EQ(shard_gets(), before) << "inspect downloads no shard";
  RunResult verify = run("verify " + url("data") + cache(), tmp_);
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find(url("data/train") + ": all 1200 records in "), std::string::npos)
      << verify.out;
}

TEST_F(RemoteCliTest, BadInputIsOneLineNamingTheUrl) {
  expect_one_line_error(run("inspect " + url("nothing") + cache(), tmp_),
                        url("nothing") + ": neither a dataset (no manifest.json)");
  expect_one_line_error(
      run("train --data " + url("data") + " --shuffle-window 4 --cache-gb 1e-6" + cache(), tmp_),
      url("data/train") + ": --cache-gb 1e-06 holds fewer than the ");
  fs::copy(root() + "/data/train", root() + "/holed", fs::copy_options::recursive);
  for (const auto& entry : fs::directory_iterator(root() + "/holed"))
    if (entry.path().extension() == ".stk") fs::remove(entry.path());
  RunResult holed = run("verify " + url("holed") + cache(), tmp_);
  expect_one_line_error(holed, url("holed") + "/");
  EXPECT_NE(holed.err.find(": HTTP 404"), std::string::npos) << holed.err;
}

// nginx serving photos/ (an image folder of 2 classes, 6 JPEGs) and flat/ (no class folders).
class RemoteImageFolderCliTest : public testing::ServerSuite<RemoteImageFolderCliTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    for (int i = 0; i < 6; ++i) {
      image::testing::JpegSpec spec;
      spec.width = 16 + i;
      spec.height = 12;
      const std::vector<uint8_t> jpeg = image::testing::encode_jpeg(spec);
      const std::string path =
          root() + "/photos/" + (i % 2 ? "dog" : "cat") + "/" + std::to_string(i) + ".jpg";
      fs::create_directories(fs::path(path).parent_path());
      throw_if_error(write_file_atomically(path, std::string(jpeg.begin(), jpeg.end())));
    }
    fs::create_directories(root() + "/flat");
    throw_if_error(write_file_atomically(root() + "/flat/a.jpg", "x"));
    start_nginx();
  }
  std::string cache() const { return " --cache-dir " + (tmp_ / "cache"); }

  testing::TempDir tmp_;
};

TEST_F(RemoteImageFolderCliTest, InspectVerifyAndBenchLoaderReadAnImageFolderByUrl) {
  const std::string photos = url("_index_json/photos/");
  RunResult inspect = run("inspect " + photos + " --json" + cache(), tmp_);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const nlohmann::json j = nlohmann::json::parse(inspect.out);
  EXPECT_EQ(j["records"], 6) << inspect.out;
  EXPECT_EQ(j["class_names"], nlohmann::json({"cat", "dog"})) << inspect.out;
  RunResult verify = run("verify " + photos + cache(), tmp_);
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find("all 6 records"), std::string::npos) << verify.out;
  RunResult bench = run("bench loader --data " + url("_index/photos/") +
                            " --epochs 1 --batch 2 --image-size 8" + cache(),
                        tmp_);
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  expect_one_line_error(run("inspect " + url("_index/flat/") + cache(), tmp_),
                        url("_index/flat") + ": neither a dataset");
  expect_one_line_error(run("bench loader --data " + url("_index/nothing/") + cache(), tmp_),
                        url("_index/nothing"));
}

// A URL's password and presigned signature (nginx ignores both) reach no output of `train` or
// `bench loader`: not stdout or stderr, the log, the trace, the checkpoints, the cache, nor the
// report's report.json and index.html (its data fact and command line).
TEST_F(RemoteCliTest, APasswordAndSignatureInTheUrlReachNoOutput) {
  const auto secret_url = [](const std::string& path) {
    return "http://user:PW-" + std::string(kSentinel) + "@" + url(path).substr(7) +
           "?X-Amz-Signature=SIG-" + kSentinel;
  };
  const std::string outputs =
      " --log " + (tmp_ / "run.jsonl") + " --trace " + (tmp_ / "trace.json") + cache();
  RunResult trained =
      run("train --data " + secret_url("data") + " --epochs 1 --batch 64" + " --checkpoint-dir " +
              (tmp_ / "ckpt") + " --report " + (tmp_ / "train-report") + outputs,
          tmp_);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  RunResult bench = run("bench loader --data=" + secret_url("data/train") +
                            " --epochs 1 --report " + (tmp_ / "bench-report") + cache(),
                        tmp_);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const std::string report = contents_of(tmp_ / "train-report");
  EXPECT_NE(report.find(url("data")), std::string::npos) << "the report names the data";
  EXPECT_NE(contents_of(tmp_ / "bench-report").find("--data=" + url("data/train")),
            std::string::npos);
  for (const std::string& text :
       {trained.out, trained.err, bench.out, bench.err, contents_of(tmp_.path())})
    EXPECT_EQ(text.find(kSentinel), std::string::npos) << text.substr(0, 2000);
}

// bench loader reads in the order it measures: with --shuffle-window 2 and a cache just over
// that window's floor (5 of 12 shards), which train accepts, its bare loop reads windows too
// (not a global shuffle that needs every shard at once) and advises the cache of its own order.
TEST_F(RemoteCliTest, BenchLoaderRunsInTheCacheTrainRunsIn) {
  testing::write_labelled_dataset(root() + "/windowed", 30000, 10, 100 * 1024);
  const Manifest m = Manifest::load(root() + "/windowed").value_or_throw();
  ASSERT_GE(m.shards.size(), 10u);
  const std::string args = " --data " + url("windowed") + " --shuffle-window 2 --cache-gb 0.0006";
  const RunResult trained = run("train --epochs 1 --batch 32" + args + cache(), tmp_);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const RunResult bench = run("bench loader --epochs 1 --batch 32" + args + cache(), tmp_);
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
}

// Whether a download into `cache` is under way (a .part file exists).
bool downloading(const std::string& cache) {
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(cache, ec))
    if (entry.path().extension() == ".part") return true;
  return false;
}

// Interrupts end a stalled download (nginx's /_slow/ sends a 12 MB shard at 100 KB/s): `verify`
// and `bench loader` quit at the first SIGINT, `train` by the third (its setup quits at the
// first; a run under way stops after its step, and a third SIGINT quits at once), with exit
// code 130; also when stoker started with SIGINT ignored, as a script's background job does.
TEST(StalledDownloadCliTest, InterruptsEndTheWait) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "root/ds", 300000);
  auto server = std::make_unique<testing::LoopbackServer>(
      testing::LoopbackServer::nginx(dir / "root", dir / "nginx"));
  if (!server->skip_reason().empty()) GTEST_SKIP() << server->skip_reason();
  const std::string url = server->url() + "/_slow/ds";
  const std::vector<std::pair<std::vector<std::string>, int>> commands = {
      {{"verify", url}, 1},
      {{"bench", "loader", "--data", url}, 1},
      {{"train", "--data", url, "--epochs", "1"}, 3}};
  int run = 0;
  for (const auto& [args, interrupts] : commands) {
    const std::string cache = dir / ("cache" + std::to_string(run++));
    std::vector<std::string> with_cache = args;
    with_cache.insert(with_cache.end(), {"--cache-dir", cache});
    struct sigaction ignore = {}, previous = {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &previous);  // inherited by the child, as `stoker ... &` in sh
    testing::CliProcess stoker(with_cache, dir);
    sigaction(SIGINT, &previous, nullptr);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!downloading(cache) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(downloading(cache)) << args[0] << ": " << stoker.err();
    for (int i = 0; i < interrupts; ++i) {
      stoker.signal(SIGINT);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const std::optional<int> code = stoker.wait_for(std::chrono::seconds(10));
    ASSERT_TRUE(code.has_value()) << args[0] << " still waits after " << interrupts << " SIGINT";
    EXPECT_EQ(*code, 130) << args[0] << ": " << stoker.err();
  }
}

// weed holding the dataset under s3://BUCKET/ds, uploaded with signed PUTs.
class S3CliTest : public testing::ServerSuite<S3CliTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    server_ =
        std::make_unique<testing::LoopbackServer>(testing::LoopbackServer::s3(*dir_ / "weed"));
    if (!server_->skip_reason().empty()) return;
    testing::write_rows_dataset(*dir_ / "ds", 400, 1);
    const remote::RemoteUrl url = remote::parse_remote_url(dataset_url()).value_or_throw();
    auto store = remote::open_object_store(url, remote::HttpClient::create().value_or_throw(),
                                           environment(server_->get("secret_key")))
                     .value_or_throw();
    for (const auto& entry : fs::directory_iterator(*dir_ / "ds"))
      throw_if_error(
          store->put_file(entry.path().filename().string(), entry.path().string()).status());
  }
  static remote::Environment environment(const std::string& secret) {
    const std::string access = server_->get("access_key"), endpoint = server_->url(),
                      region = server_->get("region");
    return [=](const std::string& name) -> std::optional<std::string> {
      if (name == "AWS_ACCESS_KEY_ID") return access;
      if (name == "AWS_SECRET_ACCESS_KEY") return secret;
      if (name == "AWS_ENDPOINT_URL_S3") return endpoint;
      if (name == "AWS_REGION") return region;
      return std::nullopt;
    };
  }
  // The variables for a `stoker` run with `secret`.
  static std::string env(const std::string& secret) {
    return "AWS_ACCESS_KEY_ID=" + server_->get("access_key") + " AWS_SECRET_ACCESS_KEY=" + secret +
           " AWS_ENDPOINT_URL_S3=" + server_->url() + " AWS_REGION=" + server_->get("region");
  }
  static std::string dataset_url() { return "s3://" + server_->get("bucket") + "/ds"; }

  testing::TempDir tmp_;
};

TEST_F(S3CliTest, VerifiesWithTheKeysAndAWrongSecretIsOneLine403NeverPrinted) {
  const std::string cache = " --cache-dir " + (tmp_ / "cache");
  RunResult verified =
      run("verify " + dataset_url() + cache, tmp_, env(server_->get("secret_key")));
  ASSERT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_NE(verified.out.find(dataset_url() + ": all 400 records"), std::string::npos);
  RunResult trained = run("train --data " + dataset_url() + " --epochs 1 --batch 32 --log " +
                              (tmp_ / "log.jsonl") + cache,
                          tmp_, env(kSentinel));
  expect_one_line_error(trained, dataset_url() + "/manifest.json: HTTP 403");
  for (const std::string& text :
       {verified.out, verified.err, trained.out, trained.err, contents_of(tmp_.path())})
    EXPECT_EQ(text.find(kSentinel), std::string::npos);
}

// nginx stopped for good while `stoker train` downloads through its 100 KB/s location: the
// run ends once STOKER_RETRY_SECONDS is spent, with one line naming a shard's URL, exit 1.
TEST(ServerGoneCliTest, ARunWhoseServerNeverComesBackIsOneLineNamingTheUrl) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "root/ds", 20000, 10, 4096);
  auto server = std::make_unique<testing::LoopbackServer>(
      testing::LoopbackServer::nginx(dir / "root", dir / "nginx"));
  if (!server->skip_reason().empty()) GTEST_SKIP() << server->skip_reason();
  const std::string url = server->url() + "/_slow/ds";
  std::future<RunResult> running = std::async(std::launch::async, [&] {
    return run("train --data " + url + " --epochs 1 --batch 32 --cache-dir " + (dir / "cache"), dir,
               "STOKER_RETRY_SECONDS=1");
  });
  const auto shard_gets = [&] {
    std::ifstream log(dir / "nginx/access.log");
    int gets = 0;
    for (std::string line; std::getline(log, line);)
      gets += line.find(".stk 200") != std::string::npos;
    return gets;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (shard_gets() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(shard_gets(), 3) << "the run started downloading";
  server.reset();  // stops nginx: the transfers under way are cut, new ones refused
  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_EQ(running.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "a hang";
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, std::chrono::seconds(15));
  const RunResult result = running.get();
  expect_one_line_error(result, url + "/shard-");
  // "after N attempts over T s": one attempt when the first one used up the budget (a loaded
  // machine).
  EXPECT_TRUE(std::regex_search(result.err, std::regex(" after [0-9]+ attempts? over [0-9.]+ s")))
      << result.err;
}

// `stoker train` from a URL stopped inside its second epoch (--max-steps, a checkpoint) and
// resumed with the cache as it was, deleted, or with every other shard removed: the same
// samples in the same order, so the last epoch's record equals an uninterrupted run's.
class RemoteResumeCliTest : public testing::ServerSuite<RemoteResumeCliTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    testing::write_labelled_dataset(*dir_ / "root/data/train", 3000, 10, 4096);  // 43 shards
    testing::write_labelled_dataset(*dir_ / "root/data/test", 500, 10, 4096);
    server_ = std::make_unique<testing::LoopbackServer>(
        testing::LoopbackServer::nginx(*dir_ / "root", *dir_ / "nginx"));
  }
  // The epoch records of `stoker train ARGS` from the URL, logged to tmp_/NAME.jsonl.
  std::vector<nlohmann::json> epochs(const std::string& name, const std::string& args) {
    const RunResult r = run("train --data " + server_->url() +
                                "/data --epochs 2 --batch 32 --seed 4 --shuffle-window 2 "
                                "--cache-gb 0.00016 --log " +
                                (tmp_ / (name + ".jsonl")) + " " + args,
                            tmp_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return epoch_records(tmp_ / (name + ".jsonl"));
  }

  testing::TempDir tmp_;
};

TEST_F(RemoteResumeCliTest, ResumesExactlyWithTheCacheWarmColdOrPartlyEvicted) {
  const std::vector<nlohmann::json> straight_epochs =
      epochs("straight", "--cache-dir " + (tmp_ / "c0"));
  ASSERT_EQ(straight_epochs.size(), 2u);
  const nlohmann::json& straight = straight_epochs[1];
  for (const std::string cache : {"warm", "cold", "evicted"}) {
    const std::string args =
        "--cache-dir " + (tmp_ / cache) + " --checkpoint-dir " + (tmp_ / ("ck-" + cache));
    ASSERT_EQ(epochs(cache + "-stopped", args + " --max-steps 130").size(), 1u)
        << "stopped in epoch 2 (an epoch is 94 steps)";
    if (cache == "cold") fs::remove_all(tmp_ / cache);
    if (cache == "evicted") {
      std::vector<fs::path> shards;
      for (const auto& entry : fs::recursive_directory_iterator(tmp_ / cache))
        if (entry.path().parent_path().filename() == "shards") shards.push_back(entry.path());
      std::sort(shards.begin(), shards.end());
      ASSERT_GT(shards.size(), 2u);
      for (size_t i = 0; i < shards.size(); i += 2) fs::remove(shards[i]);
    }
    const std::vector<nlohmann::json> resumed_epochs =
        epochs(cache + "-resumed", args + " --resume");
    ASSERT_EQ(resumed_epochs.size(), 1u) << "epoch 2 only: it resumed";
    const nlohmann::json& resumed = resumed_epochs[0];
    for (const char* key :
         {"epoch", "steps", "samples", "train_loss", "test_loss", "test_accuracy"})
      EXPECT_EQ(resumed[key], straight[key]) << cache << " " << key;
  }
}

// A cache on a small disk of its own: a tmpfs mounted in a private mount namespace (`unshare
// -rm`, as root or not), around a dataset of 4 KiB shards that the disk cannot hold whole.
class CacheDiskCliTest : public testing::ServerSuite<CacheDiskCliTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    testing::write_labelled_dataset(*dir_ / "root/ds", 20000, 10, 4096);
    server_ = std::make_unique<testing::LoopbackServer>(
        testing::LoopbackServer::nginx(*dir_ / "root", *dir_ / "nginx"));
  }
  void SetUp() override {
    ServerSuite::SetUp();
    if (std::system("unshare -rm true 2>/dev/null") != 0)
      GTEST_SKIP() << "unshare -rm (a private mount namespace) is not allowed here";
  }
  // `stoker ARGS` with --cache-dir DISK/cache, DISK a tmpfs of `kib` KiB holding a file of
  // `filler_kib` KiB beside the cache; the cache is copied out to tmp_/after at the end (the
  // tmpfs goes with the namespace).
  RunResult run_on_disk(const std::string& args, int kib, int filler_kib) {
    const std::string disk = tmp_ / "disk";
    fs::create_directories(disk);
    const std::string wrap = "unshare -rm sh -c 'mount -t tmpfs -o size=" + std::to_string(kib) +
                             "k tmpfs " + disk + " && head -c " +
                             std::to_string(filler_kib * 1024) + " /dev/zero >" + disk +
                             "/filler && \"$0\" \"$@\"; rc=$?; cp -a " + disk + "/cache " +
                             (tmp_ / "after") + "; exit $rc'";
    return run(args + " --cache-dir " + disk + "/cache", tmp_, wrap);
  }
  static std::string train_args(const std::string& data, const std::string& log) {
    return "train --data " + data + " --epochs 2 --batch 32 --seed 4 --shuffle-window 2 " +
           "--log " + log;
  }
  // Where the copied cache holds files of a download in progress.
  std::vector<std::string> parts_left() const {
    std::vector<std::string> parts;
    for (const auto& entry : fs::recursive_directory_iterator(tmp_ / "after"))
      if (entry.path().extension() == ".part") parts.push_back(entry.path());
    return parts;
  }

  testing::TempDir tmp_;
};

// 512 KiB: the cache's own files and about 115 of the 286 shards, some 3 times what the next
// batches need (these tiny batches prefetch 64 deep: 2,112 positions, about 35 shards); the
// budget, 1 GB, never binds. Each epoch fills the disk, and the cache evicts the shards needed
// last to go on.
TEST_F(CacheDiskCliTest, AFullDiskEvictsAndTheRunGoesOn) {
  uintmax_t dataset_bytes = 0;
  for (const auto& entry : fs::directory_iterator(*dir_ / "root/ds"))
    if (entry.path().extension() == ".stk") dataset_bytes += entry.file_size();
  ASSERT_GT(dataset_bytes, 512u * 1024) << "the disk must be too small for the whole dataset";
  const std::string local_log = tmp_ / "local.jsonl", remote_log = tmp_ / "remote.jsonl";
  RunResult local = run(train_args(*dir_ / "root/ds", local_log), tmp_);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  RunResult remote =
      run_on_disk(train_args(server_->url() + "/ds", remote_log) + " --cache-gb 1", 512, 0);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(train_losses(remote_log), train_losses(local_log));
  EXPECT_EQ(parts_left(), std::vector<std::string>());
}

// A disk with room for the cache's own files (its copy of the manifest) and about two shards
// beside another file: one line naming the cache, and nothing left that a later run would take
// for a verified shard: that run, on a disk with room, trains as the local run does.
TEST_F(CacheDiskCliTest, ADiskWithoutRoomIsOneLineNamingTheCache) {
  const std::string local_log = tmp_ / "local.jsonl", remote_log = tmp_ / "remote.jsonl";
  RunResult local = run(train_args(*dir_ / "root/ds", local_log), tmp_);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const int manifest_kib =
      static_cast<int>(fs::file_size(*dir_ / "root/ds/manifest.json") / 4096 + 1) * 4;
  RunResult full =
      run_on_disk(train_args(server_->url() + "/ds", tmp_ / "full.jsonl") + " --cache-gb 1", 256,
                  256 - manifest_kib - 16);
  expect_one_line_error(full, "cache " + (tmp_ / "disk/cache") + ": its disk has no room for ");
  EXPECT_EQ(parts_left(), std::vector<std::string>());
  RunResult later = run(
      train_args(server_->url() + "/ds", remote_log) + " --cache-dir " + (tmp_ / "after"), tmp_);
  ASSERT_EQ(later.exit_code, 0) << later.err;
  EXPECT_EQ(train_losses(remote_log), train_losses(local_log));
}

}  // namespace
}  // namespace stoker
