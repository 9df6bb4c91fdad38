// Dataset::open cross-checks manifest and shards; verify names shard and record; a dataset over
// a shard source that needs pins pins the shards of the records it is asked for.
#include "stoker/store/dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stoker/store/local_shard_source.h"
#include "stoker/testing/records.h"
#include "stoker/testing/slow_shard_source.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_labelled_dataset(dir_ / "ds", 300, 10, 2048); }
  std::string ds() { return dir_ / "ds"; }
  nlohmann::json manifest() {
    return nlohmann::json::parse(read_file(ds() + "/manifest.json").value_or_throw());
  }
  void save(const nlohmann::json& j) {
    ASSERT_TRUE(write_file_atomically(ds() + "/manifest.json", j.dump()).is_ok());
  }
  Status open_status() { return Dataset::open(ds()).status(); }
  testing::TempDir dir_;
};

TEST_F(DatasetTest, LocateMapsGlobalToShardRecords) {
  auto d = Dataset::open(ds()).value_or_throw();
  uint64_t global = 0;
  for (int s = 0; s < d->num_shards(); ++s) {
    for (uint64_t r = 0; r < d->shard(s).records(); ++r, ++global) {
      auto at = d->locate(global);
      ASSERT_EQ(at.shard, s);
      ASSERT_EQ(at.record, r);
    }
  }
  EXPECT_EQ(global, 300u);
}

TEST_F(DatasetTest, MissingShardIsNamed) {
  fs::remove(ds() + "/shard-00001.stk");
  Status s = open_status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("shard-00001.stk"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("missing"), std::string::npos) << s.message();
}

TEST_F(DatasetTest, NoManifestIsNotADataset) {
  fs::remove(ds() + "/manifest.json");
  EXPECT_NE(open_status().message().find("not a stoker dataset"), std::string::npos);
  EXPECT_EQ(Dataset::open(dir_ / "nowhere").status().code(), StatusCode::kNotFound);
}

TEST_F(DatasetTest, NewerManifestVersionIsUnsupported) {
  auto j = manifest();
  j["format_version"] = 99;
  save(j);
  EXPECT_EQ(open_status().code(), StatusCode::kUnsupported);
}

TEST_F(DatasetTest, ManifestThatDisagreesWithAShardIsCorrupt) {
  auto j = manifest();
  j["shards"][0]["index_xxh3"] = "0123456789abcdef";
  save(j);
  EXPECT_NE(open_status().message().find("index checksum differs"), std::string::npos);
  j = manifest();
  j["shards"][0]["records"] = j["shards"][0]["records"].get<int>() + 1;
  j["records"] = 301;
  save(j);
  EXPECT_NE(open_status().message().find("shard holds"), std::string::npos);
}

TEST_F(DatasetTest, MalformedManifestIsCorrupt) {
  for (const char* text : {"", "{}", "[1,2]", R"({"format": "stoker-dataset"})"}) {
    ASSERT_TRUE(write_file_atomically(ds() + "/manifest.json", text).is_ok());
    Status s = open_status();
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << text;
    EXPECT_NE(s.message().find("manifest.json"), std::string::npos) << s.message();
  }
}

TEST_F(DatasetTest, VerifyRecordNamesShardAndBothRecordNumbers) {
  const uint64_t target = 150;
  auto [shard, offset] = testing::record_location(ds(), target);
  const uint64_t local = Dataset::open(ds()).value_or_throw()->locate(target).record;
  testing::flip_byte(shard, offset + 2);
  auto d = Dataset::open(ds()).value_or_throw();
  for (uint64_t i = 0; i < d->size(); ++i) {
    Status s = d->verify_record(i);
    if (i != target) {
      ASSERT_TRUE(s.is_ok()) << s.message();
      continue;
    }
    EXPECT_NE(s.message().find(shard), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("record " + std::to_string(local) + ":"), std::string::npos);
    EXPECT_NE(s.message().find("dataset record 150"), std::string::npos) << s.message();
  }
}

TEST_F(DatasetTest, ADirectorysShardsNeedNoPinsAndPinningThemIsFree) {
  auto d = Dataset::open(ds()).value_or_throw();
  auto over_source = Dataset::open(LocalShardSource::open(ds()).value_or_throw()).value_or_throw();
  EXPECT_FALSE(d->needs_pins());
  EXPECT_EQ(d->describe(), ds());
  EXPECT_EQ(d->dir(), ds());
  const int64_t all[] = {0, 100, 299};
  Result<ShardPins> pins = d->pin(all, 3, {});
  ASSERT_TRUE(pins.is_ok());
  EXPECT_TRUE(pins.value().empty());
  ASSERT_EQ(over_source->size(), d->size());
  for (uint64_t i = 0; i < d->size(); ++i) {
    const ByteSpan a = d->record(i), b = over_source->record(i);
    ASSERT_EQ(std::vector<uint8_t>(a.data, a.data + a.size),
              std::vector<uint8_t>(b.data, b.data + b.size));
  }
}

TEST_F(DatasetTest, PinAcquiresEachShardOfTheRecordsOnceInShardOrder) {
  auto source = testing::SlowShardSource::open(ds(), std::chrono::nanoseconds(0));
  auto d = Dataset::open(source).value_or_throw();
  auto local = Dataset::open(ds()).value_or_throw();
  ASSERT_TRUE(d->needs_pins());
  ASSERT_GE(d->num_shards(), 3);
  const int64_t last = static_cast<int64_t>(d->size()) - 1;
  const int64_t first_of_1 = static_cast<int64_t>(d->manifest().shards[0].records);
  const int64_t records[] = {last, 0, first_of_1, 1, last};
  Result<ShardPins> pinned = d->pin(records, 5, {});
  ASSERT_TRUE(pinned.is_ok()) << pinned.status().message();
  const ShardPins& pins = pinned.value();
  ASSERT_EQ(pins.size(), 3u);
  EXPECT_EQ(pins[0].shard(), 0);
  EXPECT_EQ(pins[1].shard(), 1);
  EXPECT_EQ(pins[2].shard(), d->num_shards() - 1);
  EXPECT_EQ(source->acquires(), 3);
  EXPECT_EQ(source->live_pins(), 3);
  for (int64_t i : records) {  // readable while pinned: the local bytes
    const ByteSpan a = d->record(i), b = local->record(i);
    ASSERT_EQ(std::vector<uint8_t>(a.data, a.data + a.size),
              std::vector<uint8_t>(b.data, b.data + b.size));
  }
  pinned = Status(StatusCode::kCancelled, "let go");
  EXPECT_EQ(source->live_pins(), 0);
  EXPECT_EQ(source->readers()[0], nullptr);  // unmapped, as a remote dataset's shard may be
}

TEST_F(DatasetTest, PinFailsNamingTheShardThatCannotBeFetchedOrWhenCancelled) {
  auto source = testing::SlowShardSource::open(ds(), std::chrono::nanoseconds(0), 1);
  auto d = Dataset::open(source).value_or_throw();
  const int64_t first_of_1 = static_cast<int64_t>(d->manifest().shards[0].records);
  const int64_t records[] = {0, first_of_1};
  Status failed = d->pin(records, 2, {}).status();
  EXPECT_EQ(failed.code(), StatusCode::kIoError);
  EXPECT_EQ(failed.message(), source->failure(1));
  EXPECT_NE(failed.message().find(ds() + "/shard-00001.stk"), std::string::npos);
  EXPECT_EQ(source->live_pins(), 0);  // shard 0's pin let go with the failure

  source->set_delay(std::chrono::hours(1));
  Status cancelled = d->pin(records, 1, [] { return true; }).status();
  EXPECT_EQ(cancelled.code(), StatusCode::kCancelled);
  EXPECT_EQ(source->cancellations(), 1);
}

TEST_F(DatasetTest, NoSourceIsAnError) {
  EXPECT_EQ(Dataset::open(std::shared_ptr<ShardSource>()).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
