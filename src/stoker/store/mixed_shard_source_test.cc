#include "stoker/store/mixed_shard_source.h"

#include <gtest/gtest.h>

#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

std::string bytes_of(ByteSpan span) {
  return std::string(reinterpret_cast<const char*>(span.data), span.size);
}

TEST(MixedShardSource, ThePartsRecordsFollowOneAnotherAsTheirOwn) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir.path() + "/a", 30, 10, 200);  // several shards
  testing::write_labelled_dataset(dir.path() + "/b", 7, 10);
  auto a = Dataset::open(dir.path() + "/a").value_or_throw();
  auto b = Dataset::open(dir.path() + "/b").value_or_throw();
  auto mixed = Dataset::open(MixedShardSource::create({a, b}).value_or_throw()).value_or_throw();
  ASSERT_EQ(mixed->size(), 37u);
  EXPECT_EQ(mixed->source().part_shards(), (std::vector<int>{a->num_shards(), b->num_shards()}));
  ASSERT_GT(a->num_shards(), 1);
  for (uint64_t i = 0; i < 30; ++i) EXPECT_EQ(bytes_of(mixed->record(i)), bytes_of(a->record(i)));
  for (uint64_t i = 0; i < 7; ++i)
    EXPECT_EQ(bytes_of(mixed->record(30 + i)), bytes_of(b->record(i)));
  // Pins name the mixture's shards; a record's error names its part's file and number.
  const int64_t last = 36;
  const ShardPins pins = mixed->pin(&last, 1, nullptr).value_or_throw();
  EXPECT_TRUE(pins.empty());  // local parts stay mapped
  const std::string error = mixed->record_error(31, corrupt("bad")).message();
  EXPECT_NE(error.find(dir.path() + "/b/"), std::string::npos) << error;
  EXPECT_NE(error.find("(dataset record 1)"), std::string::npos) << error;
  EXPECT_EQ(mixed->manifest().class_names, a->manifest().class_names);
  EXPECT_EQ(mixed->source().location(), "mixture of " + dir.path() + "/a, " + dir.path() + "/b");
}

TEST(MixedShardSource, PartsOfOtherFieldsAreOneLineNamingTheField) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir.path() + "/a", 3);
  const Schema other =
      Schema::create({{"image", DType::kUint8, {1, 2, 2}}, {"target", DType::kInt64, {}}})
          .value_or_throw();
  testing::write_dataset(dir.path() + "/b", other, {});
  auto a = Dataset::open(dir.path() + "/a").value_or_throw();
  auto b = Dataset::open(dir.path() + "/b").value_or_throw();
  const Status refused = MixedShardSource::create({a, b}).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("its field 1 is 'target', the first's 'label'"),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(MixedShardSource::create({a}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
