// summarize() and count_classes(): labels are arbitrary int64 values, never sizes.
#include "stoker/store/dataset_summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stoker/testing/classification.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr int64_t kHuge = int64_t{1} << 62;

std::shared_ptr<const Dataset> open(const std::string& dir) {
  return Dataset::open(dir).value_or_throw();
}

TEST(DatasetSummaryTest, CountsEveryLabel) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "ds", 95, 10, 2048);
  auto ds = open(dir / "ds");
  DatasetSummary s = summarize(*ds);
  EXPECT_EQ(s.records, 95u);
  EXPECT_GT(s.shards, 1);
  EXPECT_EQ(s.schema_text, "image uint8[1,2,2], label int64");
  ASSERT_TRUE(s.has_labels);
  ASSERT_TRUE(s.label_histogram_complete);
  EXPECT_EQ(s.label_histogram.size(), 10u);
  EXPECT_EQ(s.label_histogram[4], 10u);
  EXPECT_EQ(s.label_histogram[5], 9u);
  EXPECT_EQ(s.label_min, 0);
  EXPECT_EQ(s.label_max, 9);
  EXPECT_EQ(count_classes(*ds).value_or_throw(), 10);
}

TEST(DatasetSummaryTest, ShowsTheManifestsStatisticsOrThatThereAreNone) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "ds", 20);
  const DatasetSummary s = summarize(*open(dir / "ds"));
  const FieldStatistics expected =
      Manifest::load(dir / "ds").value_or_throw().statistics.at("image");
  ASSERT_EQ(s.statistics.size(), 1u);
  EXPECT_EQ(s.statistics.at("image").mean, expected.mean);
  EXPECT_FALSE(s.statistics_missing);
  const nlohmann::json j = nlohmann::json::parse(s.to_json(open(dir / "ds")->schema()));
  EXPECT_EQ(j["statistics"]["image"]["mean"], expected.mean);
  EXPECT_EQ(j["statistics"]["image"]["std"], expected.std);
  EXPECT_EQ(j["statistics"]["image"]["pixels"], 80);

  Manifest old = Manifest::load(dir / "ds").value_or_throw();
  old.statistics.clear();
  throw_if_error(old.save(dir / "ds"));
  const DatasetSummary without = summarize(*open(dir / "ds"));
  EXPECT_TRUE(without.statistics_missing);
  EXPECT_FALSE(nlohmann::json::parse(without.to_json(old.schema)).contains("statistics"));

  // A dataset no field of which has statistics misses none.
  const Schema schema = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
  testing::write_dataset(dir / "numbers", schema, {});
  EXPECT_FALSE(summarize(*open(dir / "numbers")).statistics_missing);
}

TEST(DatasetSummaryTest, LabelsFarOutsideAnyClassCountAreReportedNotAllocated) {
  testing::TempDir dir;
  testing::write_rows_dataset(dir / "ds", 50, 1, {}, [](int64_t i) -> int64_t {
    if (i == 7) return kHuge;
    if (i == 9) return -3;
    return i % 4;
  });
  auto ds = open(dir / "ds");
  DatasetSummary s = summarize(*ds);
  EXPECT_EQ(s.label_histogram.size(), 6u);
  EXPECT_EQ(s.label_histogram[kHuge], 1u);
  EXPECT_EQ(s.label_histogram[-3], 1u);
  auto j = nlohmann::json::parse(s.to_json(ds->schema()));
  EXPECT_EQ(j["label_min"], -3);
  EXPECT_EQ(j["label_max"], kHuge);
  EXPECT_EQ(j["label_histogram"]["4611686018427387904"], 1);

  Result<int64_t> classes = count_classes(*ds);
  ASSERT_FALSE(classes.is_ok());
  EXPECT_EQ(classes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(classes.status().message(),
            dir / "ds" +
                ": record 7 has label 4611686018427387904; labels must be class numbers in "
                "[0, 65536)");
}

TEST(DatasetSummaryTest, NegativeLabelCannotCountClasses) {
  testing::TempDir dir;
  testing::write_rows_dataset(dir / "ds", 20, 1, {}, [](int64_t i) { return i == 11 ? -1 : 2; });
  Result<int64_t> classes = count_classes(*open(dir / "ds"));
  ASSERT_FALSE(classes.is_ok());
  EXPECT_NE(classes.status().message().find("record 11 has label -1"), std::string::npos)
      << classes.status().message();
}

TEST(DatasetSummaryTest, TooManyDistinctLabelsKeepOnlyTheRange) {
  testing::TempDir dir;
  const int64_t n = kMaxClasses + 5;
  testing::write_rows_dataset(dir / "ds", n, 1, {}, [](int64_t i) { return i * 1000003 - 17; });
  auto ds = open(dir / "ds");
  DatasetSummary s = summarize(*ds);
  EXPECT_TRUE(s.has_labels);
  EXPECT_FALSE(s.label_histogram_complete);
  EXPECT_TRUE(s.label_histogram.empty());
  EXPECT_EQ(s.label_min, -17);
  EXPECT_EQ(s.label_max, (n - 1) * 1000003 - 17);
  auto j = nlohmann::json::parse(s.to_json(ds->schema()));
  EXPECT_FALSE(j.contains("label_histogram"));
  EXPECT_EQ(j["label_max"], s.label_max);
}

TEST(DatasetSummaryTest, ClassNamesCountTheClassesWithinTheLimit) {
  testing::TempDir dir;
  testing::write_rows_dataset(dir / "named", 10, 1, {"a", "b", "c", "d", "e"});
  EXPECT_EQ(count_classes(*open(dir / "named")).value_or_throw(), 5);

  std::vector<std::string> names(kMaxClasses + 1, "x");
  testing::write_rows_dataset(dir / "many", 10, 1, names);
  Result<int64_t> classes = count_classes(*open(dir / "many"));
  ASSERT_FALSE(classes.is_ok());
  EXPECT_EQ(classes.status().message(),
            dir / "many" + ": 65537 class names, more than the 65536 classes allowed");

  testing::write_rows_dataset(dir / "empty", 0, 1);
  EXPECT_EQ(count_classes(*open(dir / "empty")).status().message(),
            dir / "empty" + " holds no records");
  DatasetSummary s = summarize(*open(dir / "empty"));
  EXPECT_FALSE(
      nlohmann::json::parse(s.to_json(open(dir / "empty")->schema())).contains("label_min"));
}

TEST(DatasetSummaryTest, WithoutALabelFieldThereAreNoClasses) {
  testing::TempDir dir;
  std::mt19937_64 rng(3);
  Schema schema = Schema::create({{"label", DType::kFloat32, {}}}).value_or_throw();
  testing::write_dataset(dir / "ds", schema, {testing::random_record(schema, rng)});
  auto ds = open(dir / "ds");
  EXPECT_FALSE(summarize(*ds).has_labels);
  EXPECT_EQ(count_classes(*ds).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
