#include "stoker/pipeline/batch_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace stoker {
namespace {

Schema image_schema() {
  return Schema::create({{"image", DType::kUint8, {3, 2, 2}},
                         {"label", DType::kInt64, {}},
                         {"jpeg", DType::kBytes, {}}})
      .value_or_throw();
}

// Fails every sample whose index is odd; throws for index 4.
class OddFails : public Transform {
 public:
  DType dtype() const override { return DType::kUint8; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput& in, uint8_t* slot) const override {
    if (in.index == 4) throw std::runtime_error("boom");
    *slot = static_cast<uint8_t>(in.index);
    return in.index % 2 ? corrupt("odd") : Status::ok();
  }
};

// Writes the given records' fields with write_samples; the buffers per field.
std::vector<std::vector<uint8_t>> write(const BatchLayout& layout,
                                        const std::vector<ByteSpan>& records,
                                        std::vector<uint8_t>* failed, Status* status) {
  std::vector<std::vector<uint8_t>> out;
  std::vector<uint8_t*> dst;
  for (const BatchField& f : layout.fields()) {
    out.emplace_back(records.size() * f.sample_bytes, 0xAB);
    dst.push_back(out.back().data());
  }
  std::vector<int64_t> indices(records.size());
  for (size_t k = 0; k < indices.size(); ++k) indices[k] = static_cast<int64_t>(k);
  size_t at = 0;
  *status = layout.write_samples(records.data(), IndexSpan{indices.data(), indices.size()}, 0,
                                 records.size(), 0, 0, dst.data(),
                                 failed ? failed->data() : nullptr, &at);
  return out;
}

// Every field of every record lands in its slot, for batch sizes below, at and above the
// prefetch distance and records in any order: copies as stored, normalised as the formula.
TEST(BatchLayoutTest, WriteSamplesPutsEveryFieldOfEveryRecordInItsSlot) {
  const Schema s = image_schema();
  const auto layout =
      BatchLayout::create(s, {{"label"}, {"image", true, {0.5f}, {0.25f}}}).value_or_throw();
  std::mt19937 rng(3);
  const size_t record_bytes = s.min_record_bytes();
  std::vector<uint8_t> store(40 * record_bytes);
  for (uint8_t& b : store) b = static_cast<uint8_t>(rng());
  for (size_t n : {0, 1, 7, 8, 9, 40}) {
    std::vector<ByteSpan> records;
    for (size_t k = 0; k < n; ++k)
      records.push_back({&store[(rng() % 40) * record_bytes], record_bytes});
    Status status;
    const auto out = write(layout, records, nullptr, &status);
    ASSERT_TRUE(status.is_ok());
    for (size_t k = 0; k < n; ++k) {
      EXPECT_EQ(std::memcmp(&out[0][k * 8], records[k].data + 12, 8), 0);
      for (int p = 0; p < 12; ++p) {
        float got;
        std::memcpy(&got, &out[1][(k * 12 + p) * 4], 4);
        EXPECT_NEAR(got, (records[k].data[p] / 255.0f - 0.5f) / 0.25f, 1e-5);
      }
    }
  }
}

TEST(BatchLayoutTest, FailuresStopOrAreMarkedAndThrowsBecomeStatuses) {
  const Schema s = image_schema();
  const auto layout =
      BatchLayout::create(s, {{"odd", std::make_shared<OddFails>()}}).value_or_throw();
  std::vector<uint8_t> record(s.min_record_bytes(), 0);
  const std::vector<ByteSpan> records(6, ByteSpan{record.data(), record.size()});
  Status status;
  write(layout, records, nullptr, &status);  // raise: stops at sample 1
  EXPECT_EQ(status.code(), StatusCode::kCorrupt);
  EXPECT_NE(status.message().find("field 'odd': odd"), std::string::npos) << status.message();

  std::vector<uint8_t> failed(6, 0);
  failed[2] = 1;  // already failed (its checksum): not written
  const auto out = write(layout, records, &failed, &status);
  EXPECT_EQ(failed, (std::vector<uint8_t>{0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(out[0][0], 0);
  EXPECT_EQ(out[0][2], 0xAB);
  EXPECT_EQ(status.code(), StatusCode::kCorrupt);  // the first failure: sample 1
}

TEST(BatchLayoutTest, AThrowingTransformIsAnInternalErrorNamingTheField) {
  const Schema s = image_schema();
  const auto layout =
      BatchLayout::create(s, {{"odd", std::make_shared<OddFails>()}}).value_or_throw();
  std::vector<uint8_t> record(s.min_record_bytes(), 0);
  std::vector<ByteSpan> records(6, ByteSpan{record.data(), record.size()});
  std::vector<uint8_t> failed = {0, 1, 0, 1, 0, 1};  // only 0, 2 and 4 run; 4 throws
  Status status;
  write(layout, records, &failed, &status);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("field 'odd': the transform threw: boom"), std::string::npos)
      << status.message();
}

TEST(BatchLayoutTest, CancellationStopsBeforeTheNextSample) {
  const Schema s = image_schema();
  const auto layout = BatchLayout::create(s, {{"label"}}).value_or_throw();
  std::vector<uint8_t> record(s.min_record_bytes(), 7);
  const std::vector<ByteSpan> records(6, ByteSpan{record.data(), record.size()});
  const std::vector<int64_t> indices(6, 0);
  std::vector<uint8_t> out(6 * 8, 0xAB);
  uint8_t* dst[] = {out.data()};
  size_t at = 0;
  int asked = 0;
  const Status status =
      layout.write_samples(records.data(), IndexSpan{indices.data(), indices.size()}, 0, 6, 0, 0,
                           dst, nullptr, &at, [&] { return ++asked > 2; });
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(out[2 * 8 - 1], 7);  // samples 0 and 1 written
  EXPECT_EQ(out[2 * 8], 0xAB);   // sample 2 on: not
  EXPECT_EQ(out[6 * 8 - 1], 0xAB);
}

TEST(BatchLayoutTest, FieldsTakeTheirTypeAndShapeFromTheirTransform) {
  auto layout = BatchLayout::create(image_schema(),
                                    {{"label"}, {"image"}, {"image_f", true, {0.1f}, {0.2f}}});
  EXPECT_FALSE(layout.is_ok());  // image_f is not a stored field
  auto ok = BatchLayout::create(
                image_schema(),
                {{"label"}, {"image", true, {0.1f}, {0.2f}}, {"odd", std::make_shared<OddFails>()}})
                .value_or_throw();
  EXPECT_EQ(ok.find("image"), 1);
  EXPECT_EQ(ok.fields()[0].dtype, DType::kInt64);
  EXPECT_EQ(ok.fields()[1].dtype, DType::kFloat32);
  EXPECT_EQ(ok.fields()[1].sample_shape, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(ok.fields()[1].sample_bytes, 48u);
  EXPECT_EQ(ok.fields()[2].sample_bytes, 1u);
  EXPECT_EQ(ok.sample_bytes(), 8u + 48u + 1u);
  EXPECT_EQ(BatchLayout::copy_all(image_schema()).value_or_throw().fields().size(),
            2u);  // the bytes field left out
}

TEST(BatchLayoutTest, RejectsImpossibleRequests) {
  Schema s = image_schema();
  EXPECT_FALSE(BatchLayout::create(s, {}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"nope"}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"jpeg"}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"label"}, {"label"}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"label", true, {0.f}, {1.f}}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"image", true, {0.f, 0.f}, {1.f, 1.f}}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"image", true, {0.f}, {0.f}}}).is_ok());
  const Schema bytes_only = Schema::create({{"jpeg", DType::kBytes, {}}}).value_or_throw();
  EXPECT_FALSE(BatchLayout::copy_all(bytes_only).is_ok());
}

// Records read in place (ShardReader::viewed): the stored fields' copies widen each sample's
// views straight into its slot, the records' bytes not passed; a transform that is no such copy
// makes the layout need them.
TEST(BatchLayoutTest, ViewedRecordsAreWidenedIntoTheirSlotsWithoutTheirBytes) {
  const Schema s =
      Schema::create({{"input_ids", DType::kInt64, {3}}, {"labels", DType::kInt64, {3}}})
          .value_or_throw();
  const auto layout = BatchLayout::create(s, {{"input_ids"}, {"labels"}}).value_or_throw();
  EXPECT_TRUE(layout.copies_views());
  const std::vector<uint16_t> tokens{65535, 1, 2, 40000, 4, 5, 6};
  RecordViews views;
  views.base = reinterpret_cast<const uint8_t*>(tokens.data());
  views.stride = 3 * sizeof(uint16_t);
  views.fields = {{StoredType::kUint16, 0, DType::kInt64},
                  {StoredType::kUint16, sizeof(uint16_t), DType::kInt64}};
  // Samples 1 and 0, their bytes not given.
  const std::vector<ByteSpan> records(2);
  const std::vector<ViewedRecord> viewed{{&views, 1}, {&views, 0}};
  std::vector<int64_t> input_ids(6, -1), labels(6, -1);
  uint8_t* dst[] = {reinterpret_cast<uint8_t*>(input_ids.data()),
                    reinterpret_cast<uint8_t*>(labels.data())};
  const int64_t indices[] = {1, 0};
  size_t at = 0;
  ASSERT_TRUE(layout
                  .write_samples(records.data(), IndexSpan{indices, 2}, 0, 2, 0, 0, dst, nullptr,
                                 &at, {}, nullptr, viewed.data())
                  .is_ok());
  EXPECT_EQ(input_ids, (std::vector<int64_t>{40000, 4, 5, 65535, 1, 2}));
  EXPECT_EQ(labels, (std::vector<int64_t>{4, 5, 6, 1, 2, 40000}));
  EXPECT_FALSE(BatchLayout::create(s, {{"input_ids"}, {"odd", std::make_shared<OddFails>()}})
                   .value_or_throw()
                   .copies_views());
}

}  // namespace
}  // namespace stoker
