// Dataset::open cross-checks manifest and shards; verify names shard and record.
#include "stoker/store/dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stoker/testing/records.h"
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

}  // namespace
}  // namespace stoker
