// dataset_check: records whose checksums are all consistent but whose layout or label is not
// what the schema and manifest say.
#include "stoker/store/dataset_check.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "stoker/testing/records.h"
#include "stoker/testing/shard_bytes.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

using shard_format::IndexEntry;
using shard_format::kIndexEntryBytes;

class DatasetCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    schema_ =
        Schema::create(
            {{"label", DType::kInt64, {}}, {"a", DType::kBytes, {}}, {"b", DType::kBytes, {}}})
            .value_or_throw();
    RecordEncoder encoder(schema_);
    std::vector<std::vector<uint8_t>> records;
    for (int64_t i = 0; i < kRecords; ++i) {
      const std::string a(i + 1, 'a'), b(2 * i + 1, 'b');
      const int64_t label = i % 3;
      throw_if_error(encoder.set_fixed(0, &label, 8));
      throw_if_error(encoder.set_bytes(1, a.data(), a.size()));
      throw_if_error(encoder.set_bytes(2, b.data(), b.size()));
      records.push_back(encoder.encode());
    }
    testing::write_dataset(dir_ / "ds", schema_, records, /*shard_bytes=*/400);
    ASSERT_GT(open()->num_shards(), 1);
  }
  std::shared_ptr<const Dataset> open() { return Dataset::open(dir_ / "ds").value_or_throw(); }

  // Rewrites the bytes of global record i (same length) by `change`, all checksums kept
  // consistent.
  template <typename Change>
  void change_record(uint64_t i, Change change) {
    const Dataset::Location at = open()->locate(i);
    testing::rewrite_shard(dir_ / "ds", at.shard, [&](std::string* bytes) {
      const auto footer = testing::load<shard_format::Footer>(*bytes, testing::footer_at(*bytes));
      const auto e =
          testing::load<IndexEntry>(*bytes, footer.index_offset + at.record * kIndexEntryBytes);
      change(bytes, e.offset);
    });
  }
  void set_u32(uint64_t i, uint64_t offset_in_record, uint32_t value) {
    change_record(i, [&](std::string* bytes, uint64_t record_at) {
      testing::store(bytes, record_at + offset_in_record, value);
    });
  }
  // The failures check_records() reports.
  std::vector<Status> failures() {
    std::vector<Status> out;
    auto dataset = open();
    const uint64_t bad = check_records(*dataset, [&](const Status& s) { out.push_back(s); });
    EXPECT_EQ(bad, out.size());
    return out;
  }
  void expect_one_failure(uint64_t record, const std::string& words) {
    std::vector<Status> found = failures();
    ASSERT_EQ(found.size(), 1u);
    const Status& s = found[0];
    auto dataset = open();
    const Dataset::Location at = dataset->locate(record);
    EXPECT_EQ(s.code(), StatusCode::kCorrupt);
    for (const std::string& part :
         {dataset->shard(at.shard).path() + ": record " + std::to_string(at.record) + ": ",
          "(dataset record " + std::to_string(record) + ")", words})
      EXPECT_NE(s.message().find(part), std::string::npos) << s.message() << " lacks " << part;
  }

  static constexpr int64_t kRecords = 12;
  testing::TempDir dir_;
  Schema schema_;
};

TEST_F(DatasetCheckTest, WrittenRecordsPass) { EXPECT_TRUE(failures().empty()); }

TEST_F(DatasetCheckTest, LengthRunningPastTheRecordIsFoundWithConsistentChecksums) {
  set_u32(7, 8 + 4, 1000);                        // b's length
  EXPECT_TRUE(open()->verify_record(7).is_ok());  // the checksums do not see it
  expect_one_failure(7, "field 'b' length 1000 runs past the record");
}

TEST_F(DatasetCheckTest, PayloadsEndingBeforeTheRecordAreFound) {
  set_u32(4, 8 + 4, 2);  // b is 9 bytes long: 7 bytes left over
  expect_one_failure(4, "fields end at byte");
}

TEST_F(DatasetCheckTest, ChecksumMismatchIsStillFound) {
  const auto [shard, offset] = testing::record_location(dir_ / "ds", 9);
  testing::flip_byte(shard, offset + 1);
  expect_one_failure(9, "checksum mismatch");
}

TEST_F(DatasetCheckTest, LabelOutsideTheManifestsClassesIsFound) {
  Manifest manifest = Manifest::load(dir_ / "ds").value_or_throw();
  manifest.class_names = {"zero", "one", "two"};
  throw_if_error(manifest.save(dir_ / "ds"));
  EXPECT_TRUE(failures().empty());
  change_record(5, [](std::string* bytes, uint64_t at) { testing::store(bytes, at, int64_t{-4}); });
  expect_one_failure(5, "label -4 is not one of the manifest's 3 classes");
}

TEST_F(DatasetCheckTest, LabelsAreFreeWithoutClassNames) {
  change_record(5, [](std::string* bytes, uint64_t at) { testing::store(bytes, at, int64_t{-4}); });
  EXPECT_TRUE(failures().empty());
}

TEST_F(DatasetCheckTest, EveryBadRecordIsReported) {
  set_u32(1, 8, 0xffffffffu);
  set_u32(10, 8, 0);
  std::vector<Status> found = failures();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_NE(found[0].message().find("dataset record 1)"), std::string::npos);
  EXPECT_NE(found[1].message().find("dataset record 10)"), std::string::npos);
}

}  // namespace
}  // namespace stoker
