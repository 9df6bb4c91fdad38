// The shard format unit: round trips through its encoders and decoders, and crafted shards
// whose checksums are consistent but whose numbers point outside the file.
#include "stoker/store/shard_format.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "stoker/store/record_encoder.h"
#include "stoker/store/record_view.h"
#include "stoker/store/shard_reader.h"
#include "stoker/store/shard_writer.h"
#include "stoker/testing/records.h"
#include "stoker/testing/shard_bytes.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

using namespace shard_format;
using testing::load;
using testing::store;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

std::string str(ByteSpan s) { return {reinterpret_cast<const char*>(s.data), s.size}; }

// Random values for every field of `schema`, as bytes.
std::vector<std::string> random_values(const Schema& schema, std::mt19937_64& rng) {
  std::vector<std::string> values;
  for (const Field& f : schema.fields()) {
    std::string v(f.is_fixed() ? f.fixed_bytes() : rng() % 300, '\0');
    for (char& c : v) c = static_cast<char>(rng());
    values.push_back(v);
  }
  return values;
}

TEST(ShardFormatTest, RandomRecordsRoundTripThroughTheRecordLayout) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    Schema schema = testing::random_schema(rng);
    RecordEncoder encoder(schema);
    for (int r = 0; r < 3; ++r) {
      std::vector<std::string> values = random_values(schema, rng);
      size_t payloads = 0;
      for (int f = 0; f < static_cast<int>(values.size()); ++f) {
        const std::string& v = values[f];
        if (schema.fields()[f].is_fixed()) {
          ASSERT_TRUE(encoder.set_fixed(f, v.data(), v.size()).is_ok());
        } else {
          ASSERT_TRUE(encoder.set_bytes(f, v.data(), v.size()).is_ok());
          payloads += v.size();
        }
      }
      const std::vector<uint8_t>& bytes = encoder.encode();
      ASSERT_EQ(bytes.size(), schema.min_record_bytes() + payloads);
      const ByteSpan record{bytes.data(), bytes.size()};
      for (int f = 0; f < static_cast<int>(values.size()); ++f) {
        if (schema.fields()[f].is_fixed()) {
          EXPECT_EQ(std::string(reinterpret_cast<const char*>(fixed_field(schema, record, f)),
                                values[f].size()),
                    values[f]);
        } else {
          EXPECT_EQ(str(variable_field(schema, record, f).value_or_throw()), values[f]);
        }
      }
    }
  }
}

TEST(ShardFormatTest, WrittenShardsDecodeToTheLayoutTheWriterChose) {
  std::mt19937_64 rng(11);
  testing::TempDir dir;
  for (int trial = 0; trial < 40; ++trial) {
    Schema schema = testing::random_schema(rng);
    const std::string path = dir / ("s" + std::to_string(trial) + ".stk");
    auto writer = ShardWriter::create(path, schema).value_or_throw();
    const uint64_t n = rng() % 50;
    uint64_t records_end = data_start(schema.to_json().size());
    uint64_t projected = shard_bytes(records_end, 0);
    for (uint64_t i = 0; i < n; ++i) {
      std::vector<uint8_t> record = testing::random_record(schema, rng);
      projected = writer.projected_bytes(record.size());
      ASSERT_TRUE(writer.append(record.data(), record.size()).is_ok());
      records_end += record.size();
    }
    ASSERT_TRUE(writer.finish().is_ok());
    const std::string bytes = read_file(path).value_or_throw();
    ASSERT_EQ(bytes.size(), projected);
    Layout layout =
        decode_layout(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path)
            .value_or_throw();
    EXPECT_EQ(layout.schema_len, schema.to_json().size());
    EXPECT_EQ(layout.data_begin % kDataAlignment, 0u);
    EXPECT_EQ(layout.record_count, n);
    EXPECT_EQ(layout.index_offset, round_up(records_end, kIndexAlignment));
    EXPECT_EQ(layout.index_checksum, writer.index_checksum());
  }
}

TEST(ShardFormatTest, HeaderStartsWithMagicVersionAndSchemaLength) {
  const std::string json = R"({"fields":[]})";
  std::vector<uint8_t> header = encode_header(json).value_or_throw();
  ASSERT_EQ(header.size(), kDataAlignment);
  const std::string bytes(header.begin(), header.end());
  EXPECT_EQ(bytes.substr(0, 8), "STKSHARD");
  EXPECT_EQ(load<uint32_t>(bytes, 8), 1u);
  EXPECT_EQ(load<uint32_t>(bytes, 12), json.size());
  EXPECT_EQ(bytes.substr(16, json.size()), json);
  EXPECT_EQ(bytes.substr(16 + json.size()), std::string(kDataAlignment - 16 - json.size(), '\0'));
}

// A valid shard of 5 records {label: int64, payload: bytes}, held in memory, whose numbers a
// test changes before open() sees it with its checksums made consistent again.
class CraftedShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(5);
    schema_ = Schema::create({{"label", DType::kInt64, {}}, {"payload", DType::kBytes, {}}})
                  .value_or_throw();
    path_ = dir_ / "crafted.stk";
    auto writer = ShardWriter::create(path_, schema_).value_or_throw();
    for (int i = 0; i < kRecords; ++i) {
      std::vector<uint8_t> record = testing::random_record(schema_, rng, 40);
      throw_if_error(writer.append(record.data(), record.size()));
    }
    throw_if_error(writer.finish());
    bytes_ = read_file(path_).value_or_throw();
    ASSERT_TRUE(ShardReader::open(path_).is_ok());
  }

  Footer footer() const { return load<Footer>(bytes_, testing::footer_at(bytes_)); }
  void set_footer(const Footer& f) { store(&bytes_, testing::footer_at(bytes_), f); }
  uint64_t entry_at(uint64_t i) const { return footer().index_offset + i * kIndexEntryBytes; }
  IndexEntry entry(uint64_t i) const { return load<IndexEntry>(bytes_, entry_at(i)); }
  void set_entry(uint64_t i, const IndexEntry& e) { store(&bytes_, entry_at(i), e); }
  uint64_t size() const { return bytes_.size(); }

  // Writes the crafted bytes with consistent checksums and opens them.
  Status open_crafted() {
    testing::fix_checksums(&bytes_);
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes_;  // no fsync: fast
    return ShardReader::open(path_).status();
  }
  void expect_corrupt(const std::string& words) {
    Status s = open_crafted();
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << s.message();
    EXPECT_NE(s.message().find(path_ + ": "), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  }

  static constexpr int kRecords = 5;
  testing::TempDir dir_;
  Schema schema_;
  std::string path_;
  std::string bytes_;
};

TEST_F(CraftedShardTest, UnchangedBytesOpen) { EXPECT_TRUE(open_crafted().is_ok()); }

TEST_F(CraftedShardTest, EntryOffsetPastTheIndexIsCorruptNamingTheRecord) {
  IndexEntry e = entry(2);
  e.offset = footer().index_offset + 8;
  e.length = 8;
  set_entry(2, e);
  expect_corrupt("record 2: offset");
}

TEST_F(CraftedShardTest, EntryOffsetPastTheFileIsCorruptNamingTheRecord) {
  IndexEntry e = entry(3);
  e.offset = size() + 4096;
  set_entry(3, e);
  expect_corrupt("record 3: offset");
}

TEST_F(CraftedShardTest, EntryOffsetInsideTheHeaderIsCorrupt) {
  IndexEntry e = entry(0);
  e.offset = 0;
  set_entry(0, e);
  expect_corrupt("record 0: offset");
}

TEST_F(CraftedShardTest, LengthRunningPastTheEndIsCorruptNamingTheRecord) {
  IndexEntry e = entry(4);
  e.length = size();
  set_entry(4, e);
  expect_corrupt("record 4: length");
}

TEST_F(CraftedShardTest, LengthRunningIntoTheIndexIsCorrupt) {
  IndexEntry e = entry(4);
  e.length = footer().index_offset - e.offset + 1;
  set_entry(4, e);
  expect_corrupt("record 4: length");
}

TEST_F(CraftedShardTest, OffsetPlusLengthWrappingAround2To64IsCorrupt) {
  IndexEntry e = entry(1);
  e.length = kU64Max - e.offset + 1 + 8;  // offset + length == 8 (mod 2^64)
  ASSERT_EQ(e.offset + e.length, 8u);
  set_entry(1, e);
  expect_corrupt("record 1: length");
}

TEST_F(CraftedShardTest, OffsetNearTwoTo64WithSmallLengthIsCorrupt) {
  IndexEntry e = entry(1);
  e.offset = kU64Max - 3;
  e.length = 16;  // offset + length wraps to 12
  set_entry(1, e);
  expect_corrupt("record 1: offset");
}

TEST_F(CraftedShardTest, RecordShorterThanTheSchemaMinimumIsCorrupt) {
  IndexEntry e = entry(2);
  e.length = schema_.min_record_bytes() - 1;
  set_entry(2, e);
  expect_corrupt("record 2: length");
}

TEST_F(CraftedShardTest, IndexEndWrappingAround2To64IsCorrupt) {
  // index_offset + 24 * record_count + 40 == size (mod 2^64) with index_offset near 2^64.
  Footer f = footer();
  f.index_offset = kU64Max - 7;
  const uint64_t wanted = size() - kFooterBytes - f.index_offset;  // mod 2^64, a multiple of 8
  uint64_t inverse_of_3 = 3;                                       // mod 2^64, by Newton
  for (int k = 0; k < 6; ++k) inverse_of_3 *= 2 - 3 * inverse_of_3;
  f.record_count = (wanted / 8 * inverse_of_3) & ((uint64_t{1} << 61) - 1);
  ASSERT_EQ(f.index_offset + kIndexEntryBytes * f.record_count + kFooterBytes, size());
  set_footer(f);
  expect_corrupt("record count");
}

TEST_F(CraftedShardTest, RecordCountWhoseIndexSizeOverflowsIsCorrupt) {
  Footer f = footer();
  f.record_count = uint64_t{1} << 62;  // 24 * 2^62 == 0 (mod 2^64)
  f.index_offset = size() - kFooterBytes;
  ASSERT_EQ(f.index_offset + kIndexEntryBytes * f.record_count + kFooterBytes, size());
  set_footer(f);
  expect_corrupt("record count");
}

TEST_F(CraftedShardTest, RecordCountLargerThanTheIndexIsCorrupt) {
  Footer f = footer();
  f.record_count += 1;
  set_footer(f);
  expect_corrupt("does not end at the footer");
}

TEST_F(CraftedShardTest, IndexOffsetPastTheFileIsCorrupt) {
  Footer f = footer();
  f.index_offset = size() + 8;
  set_footer(f);
  expect_corrupt("index at offset");
}

TEST_F(CraftedShardTest, IndexOffsetInsideTheHeaderIsCorrupt) {
  Footer f = footer();
  f.index_offset = 8;
  f.record_count = (size() - kFooterBytes - f.index_offset) / kIndexEntryBytes;
  set_footer(f);
  expect_corrupt("record count");
}

TEST_F(CraftedShardTest, UnalignedIndexOffsetIsCorrupt) {
  Footer f = footer();
  f.index_offset += 4;
  set_footer(f);
  expect_corrupt("index at offset");
}

TEST_F(CraftedShardTest, SchemaLengthPastTheFileIsCorrupt) {
  for (uint32_t schema_len : {static_cast<uint32_t>(size()), std::numeric_limits<uint32_t>::max(),
                              static_cast<uint32_t>(size() - kFooterBytes - kHeaderFixedBytes)}) {
    store(&bytes_, 12, schema_len);
    expect_corrupt("schema length");
  }
}

TEST_F(CraftedShardTest, SchemaLengthCuttingTheJsonIsCorrupt) {
  store(&bytes_, 12, uint32_t{10});
  expect_corrupt("schema is not valid JSON");
}

// Any number of the header, footer or index set to a random or boundary value: open() either
// rejects the shard (kCorrupt / kUnsupported) or every record it then hands out lies inside
// the records region and decodes without reading past the record.
TEST_F(CraftedShardTest, RandomNumbersNeverLetRecordsOutsideTheFile) {
  std::mt19937_64 rng(99);
  const std::string valid = bytes_;
  const Footer f = footer();
  std::vector<uint64_t> slots = {f.index_offset - 8, f.index_offset - 16};  // in record 4
  for (uint64_t at = 8; at < kHeaderFixedBytes; at += 4) slots.push_back(at);
  for (uint64_t at = f.index_offset; at < size() - 8; at += 8) slots.push_back(at);
  int opened = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    bytes_ = valid;
    for (int changes = 1 + static_cast<int>(rng() % 3); changes > 0; --changes) {
      const uint64_t at = slots[rng() % slots.size()];
      const uint64_t old =
          at < kHeaderFixedBytes ? load<uint32_t>(bytes_, at) : load<uint64_t>(bytes_, at);
      const uint64_t candidates[] = {rng(),
                                     old + rng() % 64 - 32,
                                     0,
                                     size(),
                                     kU64Max - rng() % 64,
                                     uint64_t{1} << (rng() % 64),
                                     old ^ (uint64_t{1} << (rng() % 64))};
      const uint64_t value = candidates[rng() % 7];
      if (at < kHeaderFixedBytes)
        store(&bytes_, at, static_cast<uint32_t>(value));
      else
        store(&bytes_, at, value);
    }
    Status s = open_crafted();
    if (!s.is_ok()) {
      ASSERT_TRUE(s.code() == StatusCode::kCorrupt || s.code() == StatusCode::kUnsupported)
          << s.message();
      continue;
    }
    ++opened;
    ShardReader reader = ShardReader::open(path_).value_or_throw();
    const uint64_t data_begin = data_start(load<uint32_t>(bytes_, 12));
    const uint64_t index_offset = footer().index_offset;
    for (uint64_t i = 0; i < reader.records(); ++i) {
      const IndexEntry e = entry(i);
      ASSERT_GE(e.offset, data_begin);
      ASSERT_LE(e.offset, index_offset);
      ASSERT_LE(e.length, index_offset - e.offset);
      const ByteSpan r = reader.record(i);
      ASSERT_EQ(r.size, e.length);
      Result<ByteSpan> payload = reader.variable_field(i, 1);
      if (payload.is_ok()) {
        ASSERT_GE(payload.value().data, r.data);
        ASSERT_LE(payload.value().data + payload.value().size, r.data + r.size);
      } else {
        ASSERT_EQ(payload.status().code(), StatusCode::kCorrupt);
      }
    }
  }
  // Some changes (e.g. of a record's checksum) leave a readable shard.
  EXPECT_GT(opened, 30) << opened;
}

}  // namespace
}  // namespace stoker
