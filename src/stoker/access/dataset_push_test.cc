// push_dataset on SeaweedFS's S3 gateway: what a reader of the URL sees after a push, a second
// push, a new version, --prune, an interrupted push, and bad input.
#include "stoker/access/dataset_push.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "stoker/store/manifest.h"
#include "stoker/testing/hostile_http_server.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker::remote {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSentinel = "SENTINEL-51d0e2";

Environment environment(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ContentQualifiedName, AddsTheIndexChecksumOnce) {
  ShardInfo shard;
  shard.index_checksum = 0x37c8c13198acad03;
  shard.file = "shard-00003.stk";
  EXPECT_EQ(content_qualified_name(shard), "shard-00003.37c8c13198acad03.stk");
  shard.file = "shard-00003.37c8c13198acad03.stk";
  EXPECT_EQ(content_qualified_name(shard), "shard-00003.37c8c13198acad03.stk");
  shard.file = "part.0000000000000001.stk";  // another checksum's name
  EXPECT_EQ(content_qualified_name(shard), "part.0000000000000001.37c8c13198acad03.stk");
  shard.file = "data";
  EXPECT_EQ(content_qualified_name(shard), "data.37c8c13198acad03.stk");
}

// push --prune against a server whose listing ignores the delimiter ("data/../other/x.stk"):
// the push stops on the listing, before its manifest goes up and before any DELETE, so the URL
// keeps its previous version and nothing outside it is touched.
TEST(HostilePushTest, AnUntrustworthyListingStopsThePushBeforeItsManifest) {
  testing::TempDir tmp;
  testing::write_labelled_dataset(tmp / "ds", 100, 10, 2048);
  testing::HostileHttpServer server([](const testing::HostileRequest& r) {
    const std::string& line = r.line;
    std::string response;
    if (line.find("list-type=2") != std::string::npos) {
      response = testing::http_response(
          "200 OK", "",
          "<ListBucketResult><Contents><Key>data/../other/shard.stk</Key></Contents>"
          "</ListBucketResult>");
    } else if (line.rfind("HEAD /bucket ", 0) == 0 || line.rfind("HEAD /bucket/ ", 0) == 0 ||
               line.rfind("PUT ", 0) == 0 || line.rfind("DELETE ", 0) == 0) {
      response = testing::http_response("200 OK", "ETag: \"e\"\r\n", "");
    } else {
      response = testing::http_response("404 Not Found", "", "");
    }
    return testing::HostileResponse{response};
  });
  const RemoteUrl url = parse_remote_url("s3://bucket/data").value_or_throw();
  const auto store =
      open_object_store(
          url, HttpClient::create().value_or_throw(),
          environment({{"AWS_ENDPOINT_URL_S3", server.url()}, {"AWS_REGION", "us-east-1"}}))
          .value_or_throw();
  PushOptions prune;
  prune.prune = true;
  const Status status = push_dataset(tmp / "ds", url, *store, prune).status();
  EXPECT_EQ(status.code(), StatusCode::kCorrupt) << status.message();
  EXPECT_NE(status.message().find("'data/../other/shard.stk', not an object directly in"),
            std::string::npos)
      << status.message();
  bool shards_sent = false;
  for (const std::string& line : server.requests()) {
    const bool put = line.rfind("PUT ", 0) == 0;
    if (put) {
      EXPECT_EQ(line.find("manifest.json"), std::string::npos) << line;
    }
    EXPECT_NE(line.rfind("DELETE ", 0), 0u) << line;
    shards_sent = shards_sent || (put && line.find(".stk") != std::string::npos);
  }
  EXPECT_TRUE(shards_sent) << "the shards went up, the manifest did not";
}

class DatasetPushTest : public testing::ServerSuite<DatasetPushTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    server_ =
        std::make_unique<testing::LoopbackServer>(testing::LoopbackServer::s3(*dir_ / "weed"));
  }
  void SetUp() override {
    ServerSuite::SetUp();
    if (IsSkipped()) return;
    prefix_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  static std::string bucket() { return server_->get("bucket"); }
  std::string url_text(const std::string& bucket_name = "") const {
    return "s3://" + (bucket_name.empty() ? bucket() : bucket_name) + "/pushed/" + prefix_;
  }
  // The store of s3://BUCKET/pushed/TEST with the server's keys (`vars` replacing them).
  std::unique_ptr<ObjectStore> store(const std::string& text,
                                     std::map<std::string, std::string> vars = {}) const {
    vars.emplace("AWS_ACCESS_KEY_ID", server_->get("access_key"));
    vars.emplace("AWS_SECRET_ACCESS_KEY", server_->get("secret_key"));
    vars["AWS_ENDPOINT_URL_S3"] = server_->url();
    vars["AWS_REGION"] = server_->get("region");
    return open_object_store(parse_remote_url(text).value_or_throw(),
                             HttpClient::create().value_or_throw(), environment(vars))
        .value_or_throw();
  }
  Result<PushSummary> push(const std::string& dir, const PushOptions& options = {}) const {
    return push_dataset(dir, parse_remote_url(url_text()).value_or_throw(), *store(url_text()),
                        options);
  }
  // Object `name` under the test's URL; "" if there is none.
  std::string get(const std::string& name) const {
    std::string bytes;
    Result<HttpResponse> got =
        store(url_text())->get(name, std::nullopt, [&](uint64_t offset, const char* d, size_t n) {
          bytes.resize(std::max<size_t>(bytes.size(), offset + n));
          bytes.replace(offset, n, d, n);
          return Status::ok();
        });
    if (got.status().code() == StatusCode::kNotFound) return "";
    return std::move(got).value_or_throw(), bytes;
  }
  // What a reader of `folder` sees: its manifest's shards, each fetched and byte-equal to the
  // local dataset's shard of the same index checksum in `local` (a dataset directory).
  void expect_complete(const std::string& folder, const std::string& local) const {
    const json manifest = json::parse(get(folder + "manifest.json"));
    const Manifest mine = Manifest::load(local).value_or_throw();
    ASSERT_EQ(manifest["shards"].size(), mine.shards.size());
    for (size_t s = 0; s < mine.shards.size(); ++s) {
      const std::string name = manifest["shards"][s]["file"];
      EXPECT_EQ(name, content_qualified_name(mine.shards[s]));
      EXPECT_TRUE(std::regex_match(name, std::regex("shard-\\d{5}\\.[0-9a-f]{16}\\.stk"))) << name;
      EXPECT_EQ(get(folder + name), read_file(local + "/" + mine.shards[s].file).value_or_throw())
          << name;
    }
    json expected = json::parse(mine.to_json());
    for (size_t s = 0; s < mine.shards.size(); ++s)
      expected["shards"][s]["file"] = content_qualified_name(mine.shards[s]);
    EXPECT_EQ(manifest, expected) << "the local manifest, its shards renamed";
  }
  std::vector<std::string> listed(const std::string& folder) const {
    return store(url_text())->list(folder).value_or_throw();
  }

  testing::TempDir tmp_;
  std::string prefix_;
};

TEST_F(DatasetPushTest, AFolderOfDatasetsGoesUpWholeAndASecondPushSendsNoShard) {
  testing::write_labelled_dataset(tmp_ / "ds/train", 300, 10, 2048);
  testing::write_labelled_dataset(tmp_ / "ds/test", 50, 10, 2048);
  const PushSummary first = push(tmp_ / "ds").value_or_throw();
  const uint64_t shards = Manifest::load(tmp_ / "ds/train").value_or_throw().shards.size() +
                          Manifest::load(tmp_ / "ds/test").value_or_throw().shards.size();
  EXPECT_EQ(first.shards, shards);
  EXPECT_EQ(first.uploaded, shards);
  EXPECT_EQ(first.present, 0u);
  EXPECT_EQ(first.records, 350u);
  EXPECT_EQ(first.datasets,
            (std::vector<std::string>{url_text() + "/test", url_text() + "/train"}));
  expect_complete("train/", tmp_ / "ds/train");
  expect_complete("test/", tmp_ / "ds/test");
  std::vector<std::string> train = {"manifest.json"};
  for (const ShardInfo& shard : Manifest::load(tmp_ / "ds/train").value_or_throw().shards)
    train.push_back(content_qualified_name(shard));
  std::sort(train.begin(), train.end());
  EXPECT_EQ(listed("train/"), train) << "nothing else";

  const PushSummary second = push(tmp_ / "ds").value_or_throw();
  EXPECT_EQ(second.uploaded, 0u);
  EXPECT_EQ(second.present, shards);
  expect_complete("train/", tmp_ / "ds/train");
}

// A new version goes up beside the old one, whose readers keep every shard they name until
// --prune deletes them; prune never touches other objects.
TEST_F(DatasetPushTest, ANewVersionKeepsTheOldShardsUntilPruned) {
  testing::write_labelled_dataset(tmp_ / "v1", 300, 10, 2048);
  testing::write_labelled_dataset(tmp_ / "v2", 310, 10, 2048);
  push(tmp_ / "v1").value_or_throw();
  const std::string old_manifest = get("manifest.json");
  ASSERT_TRUE(store(url_text())->put_bytes("notes.stk.txt", "mine").is_ok());
  ASSERT_TRUE(store(url_text())->put_bytes("sub/kept.stk", "mine").is_ok());

  const Manifest v1 = Manifest::load(tmp_ / "v1").value_or_throw();
  std::set<std::string> old_only;
  for (const ShardInfo& shard : v1.shards) old_only.insert(content_qualified_name(shard));
  for (const ShardInfo& shard : Manifest::load(tmp_ / "v2").value_or_throw().shards)
    old_only.erase(content_qualified_name(shard));
  ASSERT_EQ(old_only.size(), 1u) << "the shards of the first 300 records are the same";
  const PushSummary v2 = push(tmp_ / "v2").value_or_throw();
  EXPECT_EQ(v2.present, v1.shards.size() - 1) << "shards of the same content are not sent again";
  EXPECT_EQ(v2.pruned, 0u);
  expect_complete("", tmp_ / "v2");
  const json old = json::parse(old_manifest);  // the loop's range must outlive the loop
  for (const json& shard : old["shards"])
    EXPECT_FALSE(get(shard["file"]).empty()) << "an old reader's " << shard["file"];

  PushOptions prune;
  prune.prune = true;
  const PushSummary pruned = push(tmp_ / "v2", prune).value_or_throw();
  EXPECT_EQ(pruned.uploaded, 0u);
  EXPECT_EQ(pruned.pruned, old_only.size());
  for (const std::string& name : old_only) EXPECT_EQ(get(name), "") << name;
  std::vector<std::string> expected = {"manifest.json", "notes.stk.txt"};
  for (const ShardInfo& shard : Manifest::load(tmp_ / "v2").value_or_throw().shards)
    expected.push_back(content_qualified_name(shard));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(listed(""), expected);
  EXPECT_EQ(get("sub/kept.stk"), "mine");
  expect_complete("", tmp_ / "v2");
}

// A folder of datasets over a single one would be hidden by its manifest.json (readers take
// it first): refused before anything is sent. A single dataset over a folder is read.
TEST_F(DatasetPushTest, AFolderOverASingleDatasetIsRefused) {
  testing::write_labelled_dataset(tmp_ / "single", 100, 10, 2048);
  testing::write_labelled_dataset(tmp_ / "ds/train", 120, 10, 2048);
  testing::write_labelled_dataset(tmp_ / "ds/test", 30, 10, 2048);
  push(tmp_ / "single").value_or_throw();
  const std::vector<std::string> before = listed("");
  const Status refused = push(tmp_ / "ds").status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.message();
  EXPECT_NE(refused.message().find(url_text() + ": holds a single dataset (manifest.json)"),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(refused.message().find('\n'), std::string::npos);
  EXPECT_EQ(listed(""), before);
  EXPECT_TRUE(listed("train/").empty()) << "nothing was uploaded";
  expect_complete("", tmp_ / "single");
}

// Stopped part way (as by a kill), the URL shows the previous version, complete; the next push
// sends only what is missing and completes.
TEST_F(DatasetPushTest, AnInterruptedPushLeavesTheOldVersionAndARerunCompletes) {
  testing::write_labelled_dataset(tmp_ / "v1", 100, 10, 2048);
  testing::write_labelled_dataset(tmp_ / "v2", 400, 10, 2048);
  push(tmp_ / "v1").value_or_throw();
  const std::string old_manifest = get("manifest.json");
  int polls = 0;
  PushOptions stop;
  stop.stop_requested = [&] { return ++polls > 3; };
  const Status stopped = push(tmp_ / "v2", stop).status();
  EXPECT_EQ(stopped.code(), StatusCode::kCancelled) << stopped.message();
  EXPECT_NE(stopped.message().find(url_text() + " stopped after 3 of its shards"),
            std::string::npos)
      << stopped.message();
  EXPECT_EQ(get("manifest.json"), old_manifest);
  expect_complete("", tmp_ / "v1");

  const PushSummary rerun = push(tmp_ / "v2").value_or_throw();
  EXPECT_EQ(rerun.present, 3u);
  EXPECT_EQ(rerun.uploaded, rerun.shards - 3);
  expect_complete("", tmp_ / "v2");
}

// Each bad input: one line naming the file or URL, and nothing of the dataset on the server.
TEST_F(DatasetPushTest, BadInputIsOneLineAndNothingIsUploaded) {
  testing::write_labelled_dataset(tmp_ / "ds", 100, 10, 2048);
  const auto expect_error = [&](const Status& status, StatusCode code, const std::string& words) {
    EXPECT_EQ(status.code(), code) << words << ": " << status.message();
    EXPECT_NE(status.message().find(words), std::string::npos) << words << ": " << status.message();
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
    EXPECT_EQ(status.message().find(kSentinel), std::string::npos) << status.message();
    EXPECT_TRUE(listed("").empty());
  };
  expect_error(push(tmp_ / "nothing").status(), StatusCode::kNotFound, tmp_ / "nothing");

  const RemoteUrl http = parse_remote_url("http://127.0.0.1:9/ds").value_or_throw();
  expect_error(push_dataset(tmp_ / "ds", http, *store(url_text())).status(),
               StatusCode::kUnsupported, "http://127.0.0.1:9/ds: an HTTP(S) URL is read-only");

  PushOptions small;
  small.max_object_bytes = 1000;
  const std::string shard0 = tmp_ / "ds/shard-00000.stk";
  expect_error(push(tmp_ / "ds", small).status(), StatusCode::kUnsupported,
               shard0 + ": " + std::to_string(fs::file_size(shard0)) +
                   " bytes are over the 1000 that one upload may hold");

  const std::string missing = url_text("no-such-bucket");
  expect_error(
      push_dataset(tmp_ / "ds", parse_remote_url(missing).value_or_throw(), *store(missing))
          .status(),
      StatusCode::kNotFound, "s3://no-such-bucket: no such bucket");

  expect_error(push_dataset(tmp_ / "ds", parse_remote_url(url_text()).value_or_throw(),
                            *store(url_text(), {{"AWS_SECRET_ACCESS_KEY", kSentinel}}))
                   .status(),
               StatusCode::kIoError, "s3://" + bucket() + ": HTTP 403");

  const auto [file, offset] = testing::record_location(tmp_ / "ds", 57);
  testing::flip_byte(file, offset);
  expect_error(push(tmp_ / "ds").status(), StatusCode::kCorrupt, file);
}

}  // namespace
}  // namespace stoker::remote
