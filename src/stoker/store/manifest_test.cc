// Manifest::load parses manifest.json as strictly as docs/FORMAT.md specifies it.
#include "stoker/store/manifest.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>

#include "stoker/testing/records.h"
#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_labelled_dataset(dir(), 300, 10, 2048);
    valid_ = json::parse(read_file(path()).value_or_throw());
    ASSERT_GE(valid_["shards"].size(), 3u);
  }
  std::string dir() { return tmp_ / "ds"; }
  std::string path() { return dir() + "/manifest.json"; }
  Status load_text(const std::string& text) {
    throw_if_error(write_file_atomically(path(), text));
    return Manifest::load(dir()).status();
  }
  // Loads the valid manifest changed by `edit`.
  Status load_edited(const std::function<void(json&)>& edit) {
    json j = valid_;
    edit(j);
    return load_text(j.dump(2));
  }
  // The load fails with `code` and one line naming the manifest and holding `words`.
  void expect_error(const Status& s, StatusCode code, const std::string& words) {
    EXPECT_EQ(s.code(), code) << s.message();
    EXPECT_EQ(s.message().rfind(path(), 0), 0u) << s.message();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  }
  testing::TempDir tmp_;
  json valid_;
};

TEST_F(ManifestTest, TheWritersManifestLoadsAndUnknownKeysAreIgnored) {
  Manifest m = Manifest::load(dir()).value_or_throw();
  EXPECT_EQ(m.records, 300u);
  ASSERT_EQ(m.shards.size(), valid_["shards"].size());
  EXPECT_EQ(m.shards[1].file, "shard-00001.stk");
  EXPECT_TRUE(load_edited([](json& j) {
                j["later_key"] = {1, 2};
                j["shards"][0]["later_key"] = "x";
                j["source"] = "somewhere";
                j["class_names"] = {"a", "b"};
                // Checksums are written lower-case; upper-case hex is still 16 hex digits.
                std::string sum = j["shards"][0]["index_xxh3"];
                for (char& c : sum) c = static_cast<char>(std::toupper(c));
                j["shards"][0]["index_xxh3"] = sum;
              }).is_ok());
  EXPECT_TRUE(load_text(valid_.dump() + " \n\t\n").is_ok()) << "white space may follow";
}

TEST_F(ManifestTest, FormatVersionIsAnIntegerFromOne) {
  for (json bad : {json(1.0), json("1"), json(true), json(0), json(-1), json(nullptr)}) {
    expect_error(load_edited([&](json& j) { j["format_version"] = bad; }), StatusCode::kCorrupt,
                 "format_version");
  }
  // 2^32 + 1 must not wrap to version 1.
  for (json newer : {json(kDatasetFormatVersion + 1), json(uint64_t{1} << 32 | 1)}) {
    expect_error(load_edited([&](json& j) { j["format_version"] = newer; }),
                 StatusCode::kUnsupported, "newer than this stoker reads");
  }
}

TEST_F(ManifestTest, EveryKeyHasItsTypeAndRange) {
  struct Case {
    std::function<void(json&)> edit;
    const char* words;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j.erase("format"); }, "no 'format'"},
      {[](json& j) { j["format"] = "tar"; }, "not a stoker dataset manifest"},
      {[](json& j) { j["format"] = 1; }, "'format' must be a string"},
      {[](json& j) { j.erase("schema"); }, "no 'schema'"},
      {[](json& j) { j["schema"] = j["schema"].dump(); }, "'schema' must be an object"},
      {[](json& j) {
         j["schema"]["fields"][0]["shape"] = {1 << 30, 1 << 30};
       },
       "schema field 'image' takes more than 4 GiB"},
      {[](json& j) { j["records"] = -300; }, "'records' must be a non-negative integer"},
      {[](json& j) { j["records"] = 300.0; }, "'records' must be a non-negative integer"},
      {[](json& j) { j["records"] = "300"; }, "'records' must be a non-negative integer"},
      {[](json& j) { j["shards"] = json::object(); }, "'shards' must be an array"},
      {[](json& j) { j["shards"][1] = "shard-00001.stk"; }, "shard 1: not a JSON object"},
      {[](json& j) { j["shards"][1].erase("bytes"); }, "shard 1: no 'bytes'"},
      {[](json& j) { j["shards"][1]["bytes"] = -5; }, "shard 1: 'bytes' must be a non-negative"},
      {[](json& j) { j["shards"][1]["records"] = 1.5; },
       "shard 1: 'records' must be a non-negative integer"},
      {[](json& j) { j["shards"][1]["file"] = 7; }, "shard 1: 'file' must be a string"},
      {[](json& j) { j["shards"][0]["index_xxh3"] = "abc"; },
       "shard 0: 'index_xxh3' must be 16 hex digits"},
      {[](json& j) { j["shards"][0]["index_xxh3"] = "0123456789abcdef0"; },
       "shard 0: 'index_xxh3' must be 16 hex digits"},
      {[](json& j) { j["shards"][0]["index_xxh3"] = "0x23456789abcdef"; },
       "shard 0: 'index_xxh3' must be 16 hex digits"},
      {[](json& j) { j["shards"][0]["index_xxh3"] = " 123456789abcdef"; },
       "shard 0: 'index_xxh3' must be 16 hex digits"},
      {[](json& j) { j["shards"][0]["index_xxh3"] = 12345; },
       "shard 0: 'index_xxh3' must be a string"},
      {[](json& j) { j["source"] = 5; }, "'source' must be a string"},
      {[](json& j) { j["class_names"] = "a"; }, "'class_names' must be an array of strings"},
      {[](json& j) {
         j["class_names"] = {"a", 1};
       },
       "'class_names' must be an array of strings"},
      {[](json& j) { j["records"] = 301; }, "shard record counts add up to 300, not 301"},
  };
  for (const Case& c : cases) expect_error(load_edited(c.edit), StatusCode::kCorrupt, c.words);
}

TEST_F(ManifestTest, StatisticsRoundTripAndAManifestWithoutThemLoads) {
  Manifest m = Manifest::load(dir()).value_or_throw();
  ASSERT_EQ(m.statistics.count("image"), 1u) << "the writer computes them";
  m.statistics["image"] = {{0.1 + 0.2}, {1.0 / 3}, 1200};
  ASSERT_TRUE(m.save(dir()).is_ok());
  const Manifest back = Manifest::load(dir()).value_or_throw();
  ASSERT_EQ(back.statistics.size(), 1u);
  EXPECT_EQ(back.statistics.at("image").mean, std::vector<double>{0.1 + 0.2}) << "exact digits";
  EXPECT_EQ(back.statistics.at("image").std, std::vector<double>{1.0 / 3});
  EXPECT_EQ(back.statistics.at("image").pixels, 1200u);

  // As an older stoker wrote it: no "statistics".
  ASSERT_TRUE(load_edited([](json& j) { j.erase("statistics"); }).is_ok());
  EXPECT_TRUE(Manifest::load(dir()).value_or_throw().statistics.empty());
}

TEST_F(ManifestTest, StatisticsOutOfRangeOrNotMatchingTheFieldAreRefused) {
  struct Case {
    std::function<void(json&)> edit;
    const char* words;
  };
  const auto stats = [](json& j) -> json& { return j["statistics"]["image"]; };
  const std::vector<Case> cases = {
      {[](json& j) { j["statistics"] = json::array(); }, "'statistics' must be an object"},
      {[&](json& j) { stats(j) = 0.5; }, "statistics of \"image\": not a JSON object"},
      {[](json& j) {
         j["statistics"]["nothing"] = {{"mean", {0.5}}};
       },
       "statistics of \"nothing\": the schema has no such field"},
      {[](json& j) {
         j["statistics"]["label"] = {{"mean", {0.5}}};
       },
       "statistics of \"label\": a int64 field of 0 dimensions has none"},
      {[&](json& j) { stats(j).erase("mean"); }, "statistics of \"image\": no 'mean'"},
      {[&](json& j) { stats(j)["mean"] = 0.5; }, "'mean' must be an array of 1 number in [0, 1]"},
      {[&](json& j) {
         stats(j)["mean"] = {0.5, 0.5};
       },
       "'mean' must be an array of 1 number"},
      {[&](json& j) { stats(j)["mean"] = {"0.5"}; }, "'mean' must be an array of 1 number"},
      {[&](json& j) { stats(j)["mean"] = {-0.01}; }, "'mean' of channel 0 is -0.01, not in [0, 1]"},
      {[&](json& j) { stats(j)["mean"] = {1.5}; }, "'mean' of channel 0 is 1.5, not in [0, 1]"},
      {[&](json& j) { stats(j)["std"] = {0}; }, "'std' of channel 0 is 0, not in (0, 0.5]"},
      {[&](json& j) { stats(j)["std"] = {-0.2}; }, "'std' of channel 0 is -0.2, not in (0, 0.5]"},
      {[&](json& j) { stats(j)["std"] = {0.6}; }, "'std' of channel 0 is 0.6, not in (0, 0.5]"},
      {[&](json& j) { stats(j)["std"] = json::array(); }, "'std' must be an array of 1 number"},
      {[&](json& j) { stats(j).erase("pixels"); }, "statistics of \"image\": no 'pixels'"},
      {[&](json& j) { stats(j)["pixels"] = 0; }, "statistics of \"image\": 'pixels' is 0"},
      {[&](json& j) { stats(j)["pixels"] = -4; }, "'pixels' must be a non-negative integer"},
      {[&](json& j) { stats(j)["pixels"] = 4.5; }, "'pixels' must be a non-negative integer"},
      {[&](json& j) { stats(j)["std"] = {1e-30}; }, "'std' of channel 0 is 1e-30, below "},
  };
  for (const Case& c : cases) expect_error(load_edited(c.edit), StatusCode::kCorrupt, c.words);
  // A number beyond double's range is refused by the parser.
  expect_error(load_text(std::regex_replace(valid_.dump(2), std::regex("\"mean\": \\[[^\\]]*\\]"),
                                            "\"mean\": [1e999]")),
               StatusCode::kCorrupt, "not valid JSON");
}

TEST_F(ManifestTest, TheRecordOrderRoundTripsAndIsCheckedWhenPresent) {
  Manifest m = Manifest::load(dir()).value_or_throw();
  EXPECT_FALSE(m.record_shuffle_seed) << "the source's order, said by no key";
  EXPECT_FALSE(json::parse(m.to_json()).contains("record_order"));
  m.record_shuffle_seed = uint64_t{1} << 63;
  ASSERT_TRUE(m.save(dir()).is_ok());
  EXPECT_EQ(json::parse(read_file(path()).value_or_throw())["record_order"],
            json({{"order", "shuffled"}, {"seed", uint64_t{1} << 63}}));
  EXPECT_EQ(Manifest::load(dir()).value_or_throw().record_shuffle_seed, uint64_t{1} << 63);
  expect_error(load_edited([](json& j) { j["record_order"] = "shuffled"; }), StatusCode::kCorrupt,
               "'record_order' must be an object");
  expect_error(load_edited([](json& j) {
                 j["record_order"] = {{"order", "sorted"}, {"seed", 1}};
               }),
               StatusCode::kCorrupt, "record_order: 'order' \"sorted\" is not \"shuffled\"");
  expect_error(load_edited([](json& j) {
                 j["record_order"] = {{"order", "shuffled"}};
               }),
               StatusCode::kCorrupt, "record_order: no 'seed'");
  expect_error(load_edited([](json& j) {
                 j["record_order"] = {{"order", "shuffled"}, {"seed", -1}};
               }),
               StatusCode::kCorrupt, "'seed' must be a non-negative integer");
}

TEST_F(ManifestTest, ContentQualifiedShardNamesArePlain) {
  ASSERT_TRUE(load_edited([](json& j) {
                j["shards"][1]["file"] = "shard-00001.37c8c13198acad03.stk";
              }).is_ok());
}

TEST_F(ManifestTest, ShardNamesArePlainAndListedOnce) {
  for (const std::string& name :
       std::vector<std::string>{"", ".", "..", "../shard-00000.stk", "sub/shard", "/etc/passwd",
                                std::string("shard-00000.stk\0x", 17)}) {
    expect_error(load_edited([&](json& j) { j["shards"][1]["file"] = name; }), StatusCode::kCorrupt,
                 "is not a plain file name");
  }
  expect_error(load_edited([](json& j) { j["shards"][1]["file"] = "shard-00000.stk"; }),
               StatusCode::kCorrupt, "shard \"shard-00000.stk\" is listed twice");
}

TEST_F(ManifestTest, RecordCountsThatWrapAroundAreCorrupt) {
  // 2^63 + 2^63 + 300 wraps around to 300 in 64-bit arithmetic.
  expect_error(load_edited([](json& j) {
                 j["shards"][0]["records"] = uint64_t{1} << 63;
                 j["shards"][1]["records"] = uint64_t{1} << 63;
                 for (size_t i = 2; i < j["shards"].size(); ++i) j["shards"][i]["records"] = 0;
                 j["shards"][2]["records"] = 300;
               }),
               StatusCode::kCorrupt, "add up to more than 2^64");
}

// A shard of 0 bytes (an "Invalid argument" from the cache's preallocation) or of 2^64 - 1 (a
// floor sum that wraps) is no shard's size.
TEST_F(ManifestTest, ShardSizesAreSizesAShardCanHave) {
  for (const uint64_t bytes : {uint64_t{0}, uint64_t{7}, ~uint64_t{0}, (uint64_t{1} << 50) + 1}) {
    expect_error(load_edited([bytes](json& j) { j["shards"][0]["bytes"] = bytes; }),
                 StatusCode::kCorrupt, fmt::format("'bytes' is {}, not a shard's size", bytes));
  }
}

TEST_F(ManifestTest, NothingMayFollowTheDocumentAndNoKeyRepeats) {
  for (const std::string& tail : std::vector<std::string>{"x", "{}", std::string("\0", 1), "\n]"}) {
    expect_error(load_text(valid_.dump() + tail), StatusCode::kCorrupt, "not valid JSON");
  }
  std::string text = valid_.dump();
  const std::string records = "\"records\":300,";
  ASSERT_NE(text.find(records), std::string::npos);
  expect_error(load_text(text.insert(text.find(records), "\"records\":0,")), StatusCode::kCorrupt,
               "key \"records\" repeats");
  text = valid_.dump();
  text.insert(text.find("\"file\""), "\"file\":\"shard-00001.stk\",");
  expect_error(load_text(text), StatusCode::kCorrupt, "key \"file\" repeats");
}

TEST_F(ManifestTest, AManifestOfAbsurdSizeIsRefusedUnread) {
  ASSERT_TRUE(write_file_atomically(path(), "").is_ok());
  fs::resize_file(path(), kMaxManifestBytes + 1);  // sparse: reading it would be the bug
  Status s = Manifest::load(dir()).status();
  expect_error(s, StatusCode::kInvalidArgument, "larger than 67108864 bytes");
}

TEST_F(ManifestTest, ParsedFromBytesItKeepsTheChecksAndNamesWhereTheBytesCameFrom) {
  const std::string url = "http://127.0.0.1:1/ds/manifest.json";
  Manifest m = Manifest::parse(valid_.dump(), url).value_or_throw();
  EXPECT_EQ(m.records, Manifest::load(dir()).value_or_throw().records);
  json j = valid_;
  j["records"] = 1;
  Status s = Manifest::parse(j.dump(), url).status();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.message().rfind(url + ": shard record counts add up to", 0), 0u) << s.message();
  s = Manifest::parse(std::string(kMaxManifestBytes + 1, ' '), url).status();
  EXPECT_EQ(s.message(), url + ": larger than 67108864 bytes, the limit for this file");
}

TEST_F(ManifestTest, AManifestOfTooManyValuesIsRefusedWhileParsing) {
  // Four bytes of text per name, about a hundred bytes of memory per parsed name.
  json j = valid_;
  j["class_names"] = std::vector<std::string>(kMaxManifestValues, "a");
  expect_error(load_text(j.dump()), StatusCode::kCorrupt, "more than 1048576 JSON values");
  j["class_names"] = std::vector<std::string>(kMaxManifestValues - 2000, "a");
  EXPECT_TRUE(load_text(j.dump()).is_ok()) << "the limit counts values, not bytes";
  // Many small objects in an unknown key: checked in linear time (a parser callback that
  // erases discarded values once made this quadratic: hours for 3 MB).
  j = valid_;
  j["later_key"] = std::vector<json>(kMaxManifestValues - 2000, json::object());
  EXPECT_TRUE(load_text(j.dump()).is_ok());
}

TEST_F(ManifestTest, DeepNestingIsRefused) {
  // The document's own object is the first level.
  std::string deep = "0";
  for (int i = 1; i < kMaxManifestDepth; ++i) deep = "[" + deep + "]";
  std::string text = valid_.dump();
  EXPECT_TRUE(load_text(text.insert(1, "\"later_key\":" + deep + ",")).is_ok());
  text = valid_.dump();
  expect_error(load_text(text.insert(1, "\"later_key\":[" + deep + "],")), StatusCode::kCorrupt,
               "JSON nested more than 64 deep");
  text = valid_.dump();
  text.insert(1, "\"later_key\":" + std::string(100000, '[') + std::string(100000, ']') + ",");
  expect_error(load_text(text), StatusCode::kCorrupt, "JSON nested more than 64 deep");
}

TEST_F(ManifestTest, AManifestThatIsNotAFileIsRefusedWithoutBlocking) {
  testing::HangGuard guard;
  fs::remove(path());
  testing::make_fifo(path());
  expect_error(Manifest::load(dir()).status(), StatusCode::kInvalidArgument,
               "not a regular file (a FIFO)");
  fs::remove(path());
  fs::create_symlink("/dev/zero", path());
  expect_error(Manifest::load(dir()).status(), StatusCode::kInvalidArgument,
               "not a regular file (a character device)");
  fs::remove(path());
  fs::create_symlink(path(), path());
  expect_error(Manifest::load(dir()).status(), StatusCode::kIoError,
               "Too many levels of symbolic links");
}

}  // namespace
}  // namespace stoker
