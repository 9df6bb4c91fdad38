// Variable-length typed fields (docs/FORMAT.md): float32 [N, 4] boxes and int64 [N] labels
// sharing N, int64 [T] tokens; their schema JSON, record layout, version 2, the manifest's
// max_lengths, and what verify finds in records whose checksums are all consistent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "stoker/store/dataset.h"
#include "stoker/store/dataset_check.h"
#include "stoker/store/dataset_summary.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/records.h"
#include "stoker/testing/shard_bytes.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

using nlohmann::json;

Schema detection_schema() {
  Field boxes{"boxes", DType::kFloat32, {4}, "N"};
  Field labels{"labels", DType::kInt64, {}, "N"};
  Field tokens{"tokens", DType::kInt64, {}, "T"};
  return Schema::create(
             {{"image", DType::kBytes, {}}, boxes, {"id", DType::kInt64, {}}, labels, tokens})
      .value_or_throw();
}

// Record i: image "img<i>", id i, i % 4 boxes {i, k, i + k, 2k} with labels 10 i + k, and 3 - i % 4
// tokens.
std::vector<uint8_t> detection_record(const Schema& schema, int64_t i) {
  RecordEncoder encoder(schema);
  const std::string image = "img" + std::to_string(i);
  std::vector<float> boxes;
  std::vector<int64_t> labels, tokens;
  for (int64_t k = 0; k < i % 4; ++k) {
    boxes.insert(boxes.end(), {float(i), float(k), float(i + k), float(2 * k)});
    labels.push_back(10 * i + k);
  }
  for (int64_t k = 0; k < 3 - i % 4; ++k) tokens.push_back(k);
  throw_if_error(encoder.set_bytes(0, image.data(), image.size()));
  throw_if_error(encoder.set_rows(1, boxes.data(), labels.size()));
  throw_if_error(encoder.set_fixed(2, &i, 8));
  throw_if_error(encoder.set_rows(3, labels.data(), labels.size()));
  throw_if_error(encoder.set_rows(4, tokens.data(), tokens.size()));
  return encoder.encode();
}

template <typename T>
std::vector<T> rows_as(const VariableRows& rows) {
  std::vector<T> out(rows.bytes.size / sizeof(T));
  std::memcpy(out.data(), rows.bytes.data, rows.bytes.size);
  return out;
}

TEST(VariableLengthSchemaTest, JsonNamesTheLeadingDimension) {
  const Schema schema = detection_schema();
  EXPECT_EQ(schema.to_json(), R"({"fields":[{"dtype":"bytes","name":"image"},)"
                              R"({"dtype":"float32","name":"boxes","shape":["N",4]},)"
                              R"({"dtype":"int64","name":"id","shape":[]},)"
                              R"({"dtype":"int64","name":"labels","shape":["N"]},)"
                              R"({"dtype":"int64","name":"tokens","shape":["T"]}]})");
  EXPECT_EQ(Schema::from_json(schema.to_json(), "x").value_or_throw(), schema);
  EXPECT_EQ(schema.format_version(), 2u);
  EXPECT_EQ(schema.fixed_bytes(), 8u);
  EXPECT_EQ(schema.num_variable(), 4);
  EXPECT_EQ(schema.min_record_bytes(), 8u + 16);
  EXPECT_EQ(schema.fields()[1].row_bytes(), 16u);
  EXPECT_EQ(schema.fields()[3].row_bytes(), 8u);
  EXPECT_EQ(schema.fields()[1].fixed_bytes(), 0u);
  EXPECT_FALSE(schema.fields()[1].is_fixed());
  EXPECT_EQ(Schema::create({{"a", DType::kUint8, {2}}}).value_or_throw().format_version(), 1u);
  // A dimension named differently is another schema.
  Field other = detection_schema().fields()[3];
  other.length_dim = "M";
  EXPECT_NE(other, detection_schema().fields()[3]);
}

TEST(VariableLengthSchemaTest, BadDimensionsAreRefusedInOneLine) {
  for (const char* text : {
           R"({"fields":[{"name":"a","dtype":"bytes","shape":["N"]}]})",
           R"({"fields":[{"name":"a","dtype":"uint8","shape":["N","M"]}]})",
           R"({"fields":[{"name":"a","dtype":"uint8","shape":[4,"N"]}]})",
           R"({"fields":[{"name":"a","dtype":"uint8","shape":[""]}]})",
           R"({"fields":[{"name":"a","dtype":"uint8","shape":["N\n",2]}]})",
           R"({"fields":[{"name":"a","dtype":"uint8","shape":["N",0]}]})",
           R"({"fields":[{"name":"a","dtype":"uint8","shape":["N",65536,65536]}]})",
           R"({"fields":[{"name":"a","dtype":"float32","shape":["N",65536,16384]}]})",
       }) {
    Result<Schema> s = Schema::from_json(text, "x.stk");
    ASSERT_FALSE(s.is_ok()) << text;
    EXPECT_EQ(s.status().code(), StatusCode::kCorrupt) << text;
    EXPECT_EQ(s.status().message().find('\n'), std::string::npos) << s.status().message();
    EXPECT_EQ(s.status().message().rfind("x.stk: ", 0), 0u) << s.status().message();
  }
  // A row of 4 GiB - 4 bytes is the largest that fits.
  EXPECT_TRUE(Schema::from_json(R"({"fields":[{"name":"a","dtype":"float32",)"
                                R"("shape":["N",65535,16384]}]})",
                                "x")
                  .is_ok());
}

TEST(VariableLengthRecordTest, RowsComeBackAsEncoded) {
  const Schema schema = detection_schema();
  const std::vector<uint8_t> record = detection_record(schema, 6);  // 2 boxes, 1 token
  const ByteSpan span{record.data(), record.size()};
  ASSERT_EQ(record.size(), 8u + 16 + 4 + 2 * 16 + 2 * 8 + 8);
  ASSERT_TRUE(check_record_layout(schema, span).is_ok());
  const VariableRows boxes = variable_rows(schema, span, 1).value_or_throw();
  EXPECT_EQ(boxes.rows, 2u);
  EXPECT_EQ(rows_as<float>(boxes), (std::vector<float>{6, 0, 6, 0, 6, 1, 7, 2}));
  const VariableRows labels = variable_rows(schema, span, 3).value_or_throw();
  EXPECT_EQ(rows_as<int64_t>(labels), (std::vector<int64_t>{60, 61}));
  EXPECT_EQ(variable_rows(schema, span, 4).value_or_throw().rows, 1u);
  EXPECT_EQ(variable_rows(schema, span, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(variable_rows(schema, span, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(variable_rows(schema, span, 5).status().code(), StatusCode::kInvalidArgument);
  // Zero rows: an empty payload.
  const std::vector<uint8_t> empty = detection_record(schema, 4);
  EXPECT_EQ(variable_rows(schema, {empty.data(), empty.size()}, 1).value_or_throw().rows, 0u);
}

TEST(VariableLengthRecordTest, EncoderTakesRowsOfVariableLengthFieldsOnly) {
  const Schema schema = detection_schema();
  RecordEncoder encoder(schema);
  const float box[4] = {};
  EXPECT_EQ(encoder.set_bytes(1, box, 16).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(encoder.set_rows(0, box, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(encoder.set_rows(2, box, 1).code(), StatusCode::kInvalidArgument);
  // rows × row bytes past 4 GiB, and wrapping around 2^64, are refused before any copy.
  Status s = encoder.set_rows(1, box, uint64_t{1} << 28);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "field 'boxes': 268435456 rows take 4 GiB or more");
  EXPECT_EQ(encoder.set_rows(1, box, uint64_t{1} << 60).code(), StatusCode::kInvalidArgument);
}

// Lengths in the record's table at `table` (the fixed part's end): image, boxes, labels, tokens.
void set_table_length(std::vector<uint8_t>* record, int variable, uint32_t length) {
  std::memcpy(record->data() + 8 + 4 * variable, &length, 4);
}

TEST(VariableLengthRecordTest, LayoutChecksRowsAndSharedCounts) {
  const Schema schema = detection_schema();
  std::vector<uint8_t> record = detection_record(schema, 6);  // image 4, boxes 32, labels 16
  const auto layout = [&] { return check_record_layout(schema, {record.data(), record.size()}); };
  // Boxes 31 bytes and image 5: the payloads still end where the record does.
  set_table_length(&record, 0, 5);
  set_table_length(&record, 1, 31);
  Status s = layout();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.message(), "field 'boxes' length 31 is not a multiple of its 16-byte row");
  EXPECT_EQ(variable_rows(schema, {record.data(), record.size()}, 1).status().message(),
            s.message());
  // Boxes 16 bytes (1 row), image 20: one box but two labels.
  set_table_length(&record, 0, 20);
  set_table_length(&record, 1, 16);
  s = layout();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.message(),
            "field 'labels' has 2 rows but 'boxes', which shares dimension 'N', has 1");
  // A length that runs past the record (truncated).
  set_table_length(&record, 0, 4);
  set_table_length(&record, 1, 48);
  EXPECT_EQ(layout().code(), StatusCode::kCorrupt);
  set_table_length(&record, 1, 32);
  EXPECT_TRUE(layout().is_ok());
  record.resize(record.size() - 1);
  s = layout();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("field 'tokens' length 8 runs past the record"), std::string::npos)
      << s.message();
}

// A random schema of 1-5 fields of every kind, some variable-length ones sharing a dimension.
Schema random_variable_schema(std::mt19937_64& rng) {
  std::vector<Field> fields;
  const int n = 1 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) {
    Field f;
    f.name = "f" + std::to_string(i);
    f.dtype = static_cast<DType>(rng() % 4);
    if (f.dtype != DType::kBytes && rng() % 2 == 0) f.length_dim = rng() % 2 ? "N" : "T";
    if (f.dtype != DType::kBytes) {
      const int dims = static_cast<int>(rng() % 3);
      for (int d = 0; d < dims; ++d) f.shape.push_back(1 + static_cast<int64_t>(rng() % 5));
    }
    fields.push_back(f);
  }
  return Schema::create(fields).value_or_throw();
}

// Property: for random schemas and random row counts (0 included), records written by
// DatasetWriter read back field by field, verify passes, and max_lengths are the most rows.
TEST(VariableLengthDatasetTest, RandomSchemasAndCountsRoundTrip) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 30; ++round) {
    testing::TempDir dir;
    const Schema schema = random_variable_schema(rng);
    const int records = static_cast<int>(rng() % 12);
    std::vector<std::vector<std::vector<uint8_t>>> expected(records);  // [record][field]
    std::map<std::string, uint64_t> most;
    for (const Field& f : schema.fields())
      if (f.is_variable_length()) most[f.name] = 0;
    {
      DatasetWriterOptions options;
      options.shard_bytes = 300;
      auto writer = DatasetWriter::create(dir / "ds", schema, options).value_or_throw();
      RecordEncoder encoder(schema);
      for (int r = 0; r < records; ++r) {
        const std::map<std::string, uint64_t> rows = {{"N", rng() % 4}, {"T", rng() % 7}};
        for (int f = 0; f < static_cast<int>(schema.fields().size()); ++f) {
          const Field& field = schema.fields()[f];
          const uint64_t count = field.is_variable_length() ? rows.at(field.length_dim) : 0;
          std::vector<uint8_t> value(field.is_fixed()             ? field.fixed_bytes()
                                     : field.is_variable_length() ? count * field.row_bytes()
                                                                  : rng() % 40);
          for (uint8_t& b : value) b = static_cast<uint8_t>(rng());
          throw_if_error(field.is_fixed() ? encoder.set_fixed(f, value.data(), value.size())
                         : field.is_variable_length()
                             ? encoder.set_rows(f, value.data(), count)
                             : encoder.set_bytes(f, value.data(), value.size()));
          if (field.is_variable_length()) most[field.name] = std::max(most[field.name], count);
          expected[r].push_back(std::move(value));
        }
        const std::vector<uint8_t>& record = encoder.encode();
        throw_if_error(writer->append(record.data(), record.size()));
      }
      throw_if_error(writer->finish());
    }
    auto dataset = Dataset::open(dir / "ds").value_or_throw();
    EXPECT_EQ(dataset->manifest().format_version, schema.format_version());
    EXPECT_EQ(dataset->manifest().max_lengths, most);
    for (int r = 0; r < records; ++r) {
      const ByteSpan record = dataset->record(r);
      for (int f = 0; f < static_cast<int>(schema.fields().size()); ++f) {
        const Field& field = schema.fields()[f];
        ByteSpan got{fixed_field(schema, record, f), field.fixed_bytes()};
        if (field.is_variable_length()) {
          const VariableRows rows = variable_rows(schema, record, f).value_or_throw();
          EXPECT_EQ(rows.rows * field.row_bytes(), rows.bytes.size);
          got = rows.bytes;
        } else if (!field.is_fixed()) {
          got = variable_field(schema, record, f).value_or_throw();
        }
        EXPECT_EQ(std::vector<uint8_t>(got.data, got.data + got.size), expected[r][f])
            << schema.to_json() << " record " << r << " field " << f;
      }
    }
    EXPECT_EQ(check_records(*dataset, [](const Status& s) { ADD_FAILURE() << s.message(); }), 0u);
  }
}

class VariableLengthDatasetCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::vector<uint8_t>> records;
    for (int64_t i = 0; i < 10; ++i) records.push_back(detection_record(schema_, i));
    testing::write_dataset(ds(), schema_, records, /*shard_bytes=*/500);
    ASSERT_GT(open()->num_shards(), 1);
  }
  std::string ds() const { return dir_ / "ds"; }
  std::shared_ptr<const Dataset> open() { return Dataset::open(ds()).value_or_throw(); }
  std::vector<std::string> failures() {
    std::vector<std::string> out;
    check_records(*open(), [&](const Status& s) { out.push_back(s.message()); });
    return out;
  }
  json manifest() { return json::parse(read_file(ds() + "/manifest.json").value_or_throw()); }
  void save(const json& j) {
    throw_if_error(write_file_atomically(ds() + "/manifest.json", j.dump()));
  }
  // Rewrites the length table entry `variable` of global record i, checksums kept consistent.
  void set_record_length(uint64_t i, int variable, uint32_t length) {
    const Dataset::Location at = open()->locate(i);
    testing::rewrite_shard(ds(), at.shard, [&](std::string* bytes) {
      const auto footer = testing::load<shard_format::Footer>(*bytes, testing::footer_at(*bytes));
      const auto e = testing::load<shard_format::IndexEntry>(
          *bytes, footer.index_offset + at.record * shard_format::kIndexEntryBytes);
      testing::store(bytes, e.offset + 8 + 4 * variable, length);
    });
  }

  const Schema schema_ = detection_schema();
  testing::TempDir dir_;
};

TEST_F(VariableLengthDatasetCheckTest, WriterRecordsVersionTwoAndTheMostRows) {
  const json j = manifest();
  EXPECT_EQ(j["format_version"], 2);
  EXPECT_EQ(j["max_lengths"], (json{{"boxes", 3}, {"labels", 3}, {"tokens", 3}}));
  EXPECT_EQ(j["schema"]["fields"][1]["shape"], (json{"N", 4}));
  const std::string shard = read_file(ds() + "/shard-00000.stk").value_or_throw();
  EXPECT_EQ(testing::load<shard_format::HeaderPrefix>(shard, 0).version, 2u);
  EXPECT_TRUE(failures().empty());
}

TEST_F(VariableLengthDatasetCheckTest, InspectShowsTheDimensionNames) {
  const DatasetSummary summary = summarize(*open(), /*read_labels=*/true);
  EXPECT_EQ(summary.schema_text,
            "image bytes, boxes float32[N,4], id int64, labels int64[N], tokens int64[T]");
  EXPECT_EQ(summary.format_version, 2u);
  const json shown = json::parse(summary.to_json(schema_));
  EXPECT_EQ(shown["max_lengths"], (json{{"boxes", 3}, {"labels", 3}, {"tokens", 3}}));
  EXPECT_EQ(shown["schema"]["fields"][4]["shape"], json::array({"T"}));
  // An int64 [N] field named "label" is no class label: inspect and verify read none.
  const Schema labels = Schema::create({{"label", DType::kInt64, {}, "N"}}).value_or_throw();
  RecordEncoder encoder(labels);
  const int64_t values[2] = {7, 99};
  throw_if_error(encoder.set_rows(0, values, 2));
  testing::write_dataset(dir_ / "labels", labels, {encoder.encode()});
  auto dataset = Dataset::open(dir_ / "labels").value_or_throw();
  EXPECT_FALSE(summarize(*dataset).has_labels);
}

TEST_F(VariableLengthDatasetCheckTest, DatasetsWithoutThemStayVersionOne) {
  testing::write_labelled_dataset(dir_ / "plain", 3);
  const json j = json::parse(read_file(dir_ / "plain/manifest.json").value_or_throw());
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_FALSE(j.contains("max_lengths"));
  const std::string shard = read_file(dir_ / "plain/shard-00000.stk").value_or_throw();
  EXPECT_EQ(testing::load<shard_format::HeaderPrefix>(shard, 0).version, 1u);
}

TEST_F(VariableLengthDatasetCheckTest, NewerShardVersionIsUnsupportedInOneLine) {
  testing::rewrite_shard(ds(), 1, [](std::string* bytes) {
    testing::store<uint32_t>(bytes, 8, shard_format::kVersion + 1);
  });
  const Status s = Dataset::open(ds()).status();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.message(), ds() +
                             "/shard-00001.stk: shard format version 3 is newer than this "
                             "stoker reads (2)");
}

TEST_F(VariableLengthDatasetCheckTest, NewerManifestVersionIsUnsupported) {
  json j = manifest();
  j["format_version"] = kDatasetFormatVersion + 1;
  save(j);
  const Status s = Dataset::open(ds()).status();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("dataset format version 3 is newer than this stoker reads (2)"),
            std::string::npos)
      << s.message();
}

TEST_F(VariableLengthDatasetCheckTest, VersionOneCannotHoldVariableLengthFields) {
  json j = manifest();
  j["format_version"] = 1;
  save(j);
  Status s = Dataset::open(ds()).status();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("format_version 1 with variable-length fields"), std::string::npos)
      << s.message();
  j["format_version"] = 2;
  save(j);
  testing::rewrite_shard(ds(), 0,
                         [](std::string* bytes) { testing::store<uint32_t>(bytes, 8, 1); });
  s = Dataset::open(ds()).status();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("shard-00000.stk: a shard of format version 1 with variable-length"),
            std::string::npos)
      << s.message();
}

TEST_F(VariableLengthDatasetCheckTest, MaxLengthsMustNameEveryVariableLengthField) {
  json original = manifest();
  for (const auto& [edit, words] : std::vector<std::pair<std::function<void(json&)>, std::string>>{
           {[](json& j) { j.erase("max_lengths"); }, "no 'max_lengths'"},
           {[](json& j) { j["max_lengths"].erase("tokens"); },
            "no entry for variable-length field \"tokens\""},
           {[](json& j) { j["max_lengths"]["id"] = 1; }, "\"id\" is not a variable-length field"},
           {[](json& j) { j["max_lengths"]["boxes"] = -1; },
            "'boxes' must be a non-negative integer"},
           {[](json& j) { j["max_lengths"]["boxes"] = 268435456; },
            "268435456 of \"boxes\" is more than the 268435455 rows"},
           {[](json& j) { j["max_lengths"] = json::array(); }, "'max_lengths' must be an object"},
       }) {
    json j = original;
    edit(j);
    save(j);
    const Status s = Dataset::open(ds()).status();
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << words;
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  }
  save(original);
  EXPECT_TRUE(Dataset::open(ds()).is_ok());
}

TEST_F(VariableLengthDatasetCheckTest, VerifyFindsAWrongMaxLength) {
  json j = manifest();
  j["max_lengths"]["tokens"] = 5;
  save(j);
  EXPECT_EQ(failures(), std::vector<std::string>{ds() + "/manifest.json: max_lengths of 'tokens' "
                                                        "is 5, but no record has more than 3"});
  j["max_lengths"]["tokens"] = 2;
  save(j);
  // Records 0, 4 and 8 have 3 tokens.
  const std::vector<std::string> found = failures();
  ASSERT_EQ(found.size(), 3u);
  const Dataset::Location at = open()->locate(4);
  EXPECT_EQ(found[1], open()->shard(at.shard).path() + ": record " + std::to_string(at.record) +
                          ": field 'tokens' has 3 rows, more than the manifest's max_lengths 2 "
                          "(dataset record 4)");
}

TEST_F(VariableLengthDatasetCheckTest, VerifyNamesShardRecordAndField) {
  // Record 5: image 4 bytes, 1 box, 1 label, 2 tokens. Moving 8 bytes from the labels to the
  // image keeps every checksum and the record's size.
  set_record_length(5, 0, 12);
  set_record_length(5, 2, 0);
  std::vector<std::string> found = failures();
  ASSERT_EQ(found.size(), 1u);
  const Dataset::Location at = open()->locate(5);
  EXPECT_EQ(found[0], open()->shard(at.shard).path() + ": record " + std::to_string(at.record) +
                          ": field 'labels' has 0 rows but 'boxes', which shares dimension 'N', "
                          "has 1 (dataset record 5)");
  set_record_length(5, 0, 9);
  set_record_length(5, 2, 3);
  found = failures();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("field 'labels' length 3 is not a multiple of its 8-byte row"),
            std::string::npos)
      << found[0];
}

TEST_F(VariableLengthDatasetCheckTest, WriterRefusesRecordsWhoseCountsDisagree) {
  testing::TempDir dir;
  auto writer = DatasetWriter::create(dir / "ds", schema_).value_or_throw();
  std::vector<uint8_t> record = detection_record(schema_, 6);
  set_table_length(&record, 0, 20);  // 1 box, 2 labels
  set_table_length(&record, 1, 16);
  const Status s = writer->append(record.data(), record.size());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      s.message().find(
          "record 0: field 'labels' has 2 rows but 'boxes', which shares dimension 'N', has 1"),
      std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace stoker
