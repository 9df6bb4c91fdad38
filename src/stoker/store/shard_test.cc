// ShardWriter / ShardReader: byte-exact round trips and every kind of damage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "stoker/store/record_encoder.h"
#include "stoker/store/shard_format.h"
#include "stoker/store/shard_reader.h"
#include "stoker/store/shard_writer.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

std::vector<std::vector<uint8_t>> write_shard(const std::string& path, const Schema& schema, int n,
                                              std::mt19937_64& rng) {
  auto writer = ShardWriter::create(path, schema).value_or_throw();
  std::vector<std::vector<uint8_t>> records;
  for (int i = 0; i < n; ++i) {
    records.push_back(testing::random_record(schema, rng));
    throw_if_error(writer.append(records.back().data(), records.back().size()));
  }
  throw_if_error(writer.finish());
  return records;
}

// Another shard of the same size copied over an open one, in place: each of its records is
// valid against its own index, but the reader keeps the index it checked at open, so every
// changed record fails its checksum, named by shard and record.
TEST(ShardTest, AShardOverwrittenInPlaceByAnotherFailsItsRecordChecksums) {
  testing::TempDir dir;
  Schema schema = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
  for (const char* name : {"a.stk", "b.stk"}) {
    auto writer = ShardWriter::create(dir / name, schema).value_or_throw();
    for (int64_t i = 0; i < 100; ++i) {
      const int64_t value = name[0] == 'a' ? i : 1000 + i;
      throw_if_error(writer.append(reinterpret_cast<const uint8_t*>(&value), 8));
    }
    throw_if_error(writer.finish());
  }
  ASSERT_EQ(fs::file_size(dir / "a.stk"), fs::file_size(dir / "b.stk"));
  ShardReader reader = ShardReader::open(dir / "a.stk").value_or_throw();
  ASSERT_TRUE(reader.verify_record(7).is_ok());
  const std::string other = read_file(dir / "b.stk").value_or_throw();
  {
    std::fstream over(dir / "a.stk", std::ios::in | std::ios::out | std::ios::binary);
    over.write(other.data(), static_cast<std::streamsize>(other.size()));
  }
  const Status foreign = reader.verify_record(7);
  EXPECT_EQ(foreign.code(), StatusCode::kCorrupt);
  EXPECT_NE(foreign.message().find(dir / "a.stk: record 7"), std::string::npos)
      << foreign.message();
}

TEST(ShardTest, RandomSchemasRoundTripByteExactInRandomOrder) {
  std::mt19937_64 rng(42);
  testing::TempDir dir;
  for (int trial = 0; trial < 40; ++trial) {
    Schema schema = testing::random_schema(rng);
    const std::string path = dir / ("s" + std::to_string(trial) + ".stk");
    auto records = write_shard(path, schema, static_cast<int>(rng() % 200), rng);
    ShardReader reader = ShardReader::open(path).value_or_throw();
    ASSERT_EQ(reader.records(), records.size());
    ASSERT_EQ(reader.schema(), schema);
    std::vector<size_t> order(records.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      ByteSpan r = reader.record(i);
      ASSERT_EQ(r.size, records[i].size());
      ASSERT_EQ(std::memcmp(r.data, records[i].data(), r.size), 0);
      ASSERT_TRUE(reader.verify_record(i).is_ok());
      for (int f = 0; f < static_cast<int>(schema.fields().size()); ++f) {
        if (schema.fields()[f].is_fixed()) {
          ASSERT_EQ(
              std::memcmp(reader.fixed_field(i, f), records[i].data() + schema.fixed_offset(f),
                          schema.fields()[f].fixed_bytes()),
              0);
        } else {
          ASSERT_TRUE(reader.variable_field(i, f).is_ok());
        }
      }
    }
  }
}

TEST(ShardTest, VariableFieldsComeBackAsWritten) {
  Schema schema =
      Schema::create(
          {{"label", DType::kInt64, {}}, {"a", DType::kBytes, {}}, {"b", DType::kBytes, {}}})
          .value_or_throw();
  testing::TempDir dir;
  RecordEncoder encoder(schema);
  auto writer = ShardWriter::create(dir / "v.stk", schema).value_or_throw();
  for (int i = 0; i < 10; ++i) {
    std::string a(i, 'a'), b(2 * i + 1, 'b');
    int64_t label = i;
    ASSERT_TRUE(encoder.set_fixed(0, &label, 8).is_ok());
    ASSERT_TRUE(encoder.set_bytes(1, a.data(), a.size()).is_ok());
    ASSERT_TRUE(encoder.set_bytes(2, b.data(), b.size()).is_ok());
    const auto& rec = encoder.encode();
    ASSERT_TRUE(writer.append(rec.data(), rec.size()).is_ok());
  }
  ASSERT_TRUE(writer.finish().is_ok());
  ShardReader reader = ShardReader::open(dir / "v.stk").value_or_throw();
  for (int i = 0; i < 10; ++i) {
    ByteSpan a = reader.variable_field(i, 1).value_or_throw();
    ByteSpan b = reader.variable_field(i, 2).value_or_throw();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.data), a.size), std::string(i, 'a'));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data), b.size),
              std::string(2 * i + 1, 'b'));
    int64_t label;
    std::memcpy(&label, reader.fixed_field(i, 0), 8);
    EXPECT_EQ(label, i);
  }
  EXPECT_FALSE(reader.variable_field(0, 0).is_ok());
}

// A record may give several samples (a video its clips): an in-memory reader of records with
// parts has a record per sample, each reading its stored record's bytes (held once), and says
// which of them it is; a record of no parts gives none.
TEST(ShardTest, InMemoryRecordsWithPartsGiveASamplePerPart) {
  Schema schema =
      Schema::create({{"label", DType::kInt64, {}}, {"a", DType::kBytes, {}}}).value_or_throw();
  RecordEncoder encoder(schema);
  std::vector<std::vector<uint8_t>> records;
  for (int64_t label : {7, 8, 9}) {
    const std::string a(static_cast<size_t>(label), 'x');
    throw_if_error(encoder.set_fixed(0, &label, 8));
    throw_if_error(encoder.set_bytes(1, a.data(), a.size()));
    records.push_back(encoder.encode());
  }
  const ShardReader reader = ShardReader::in_memory("clips", schema, records, {3, 0, 2});
  ASSERT_EQ(reader.records(), 5u);
  EXPECT_EQ(reader.file_bytes(), records[0].size() + records[1].size() + records[2].size());
  const std::vector<int64_t> labels = {7, 7, 7, 9, 9}, parts = {0, 1, 2, 0, 1};
  for (uint64_t i = 0; i < 5; ++i) {
    int64_t label = 0;
    std::memcpy(&label, reader.fixed_field(i, 0), 8);
    EXPECT_EQ(label, labels[i]);
    EXPECT_EQ(reader.part(i), parts[i]);
    EXPECT_EQ(reader.variable_field(i, 1).value_or_throw().size, static_cast<size_t>(label));
    EXPECT_TRUE(reader.verify_record(i).is_ok());
  }
  EXPECT_EQ(reader.record(0).data, reader.record(2).data);  // one copy of the bytes
  const ShardReader plain = ShardReader::in_memory("plain", schema, records);
  EXPECT_EQ(plain.records(), 3u);
  EXPECT_EQ(plain.part(2), 0);
}

TEST(ShardTest, ShortRecordIsRejectedByTheWriter) {
  Schema schema = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
  testing::TempDir dir;
  auto writer = ShardWriter::create(dir / "s.stk", schema).value_or_throw();
  uint8_t bytes[4] = {};
  EXPECT_EQ(writer.append(bytes, 4).code(), StatusCode::kInvalidArgument);
}

class DamagedShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(3);
    schema_ = Schema::create({{"image", DType::kUint8, {1, 4, 4}}, {"label", DType::kInt64, {}}})
                  .value_or_throw();
    path_ = dir_ / "d.stk";
    records_ = write_shard(path_, schema_, 50, rng);
    size_ = fs::file_size(path_);
  }
  Status open_status() { return ShardReader::open(path_).status(); }
  void expect_error(StatusCode code, const std::string& words) {
    Status s = open_status();
    EXPECT_EQ(s.code(), code) << s.message();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(path_), std::string::npos) << s.message();
  }

  testing::TempDir dir_;
  Schema schema_;
  std::string path_;
  std::vector<std::vector<uint8_t>> records_;
  uint64_t size_ = 0;
};

TEST_F(DamagedShardTest, EveryTruncationIsRejectedAtOpen) {
  std::string bytes = read_file(path_).value_or_throw();
  for (uint64_t len = 0; len < size_; len += 7) {
    ASSERT_TRUE(write_file_atomically(path_, bytes.substr(0, len)).is_ok());
    Status s = open_status();
    ASSERT_EQ(s.code(), StatusCode::kCorrupt) << len << ": " << s.message();
  }
}

TEST_F(DamagedShardTest, FlippedRecordByteIsFoundByVerifyNamingTheRecord) {
  const uint64_t record = 17;
  const uint64_t file_offset =
      shard_format::data_start(schema_.to_json().size()) + record * records_[0].size() + 5;
  testing::flip_byte(path_, file_offset);
  ShardReader reader = ShardReader::open(path_).value_or_throw();
  for (uint64_t i = 0; i < reader.records(); ++i) {
    Status s = reader.verify_record(i);
    if (i == record) {
      EXPECT_EQ(s.code(), StatusCode::kCorrupt);
      EXPECT_NE(s.message().find("record 17"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find(path_), std::string::npos) << s.message();
    } else {
      EXPECT_TRUE(s.is_ok()) << i;
    }
  }
}

TEST_F(DamagedShardTest, FlippedIndexByteIsRejectedAtOpen) {
  const uint64_t index_start = size_ - shard_format::kFooterBytes - 50 * 24;
  testing::flip_byte(path_, index_start + 24 * 10 + 3);
  expect_error(StatusCode::kCorrupt, "index checksum");
}

TEST_F(DamagedShardTest, FlippedHeaderByteIsRejectedAtOpen) {
  testing::flip_byte(path_, shard_format::kHeaderFixedBytes + 3);  // inside the schema JSON
  expect_error(StatusCode::kCorrupt, "header checksum");
}

TEST_F(DamagedShardTest, BadMagicIsNotAShard) {
  testing::flip_byte(path_, 0);
  expect_error(StatusCode::kCorrupt, "not a stoker shard");
}

TEST_F(DamagedShardTest, NewerFormatVersionIsUnsupported) {
  testing::flip_byte(path_, 9);  // version 1 -> 0x1001
  expect_error(StatusCode::kUnsupported, "newer than this stoker reads");
}

TEST_F(DamagedShardTest, MissingFileIsNotFound) {
  fs::remove(path_);
  expect_error(StatusCode::kNotFound, "no such file");
}

}  // namespace
}  // namespace stoker
