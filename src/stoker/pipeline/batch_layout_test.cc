#include "stoker/pipeline/batch_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace stoker {
namespace {

Schema image_schema() {
  return Schema::create({{"image", DType::kUint8, {3, 2, 2}},
                         {"label", DType::kInt64, {}},
                         {"jpeg", DType::kBytes, {}}})
      .value_or_throw();
}

TEST(BatchLayoutTest, NormalisesPerChannel) {
  auto layout = BatchLayout::create(image_schema(),
                                    {{"image", true, {0.5f, 0.25f, 0.0f}, {0.5f, 0.25f, 1.0f}}})
                    .value_or_throw();
  const BatchField& f = layout.fields()[0];
  EXPECT_EQ(f.dtype, DType::kFloat32);
  EXPECT_EQ(f.sample_bytes, 12u * 4);
  uint8_t src[12];
  for (int i = 0; i < 12; ++i) src[i] = static_cast<uint8_t>(i * 23);
  float out[12];
  layout.write(0, src, reinterpret_cast<uint8_t*>(out));
  const float mean[3] = {0.5f, 0.25f, 0.0f}, std[3] = {0.5f, 0.25f, 1.0f};
  for (int i = 0; i < 12; ++i) {
    int c = i / 4;
    EXPECT_NEAR(out[i], (src[i] / 255.0f - mean[c]) / std[c], 1e-6) << i;
  }
}

// 3 channels of 5x7 = 35 values: the vectorised body and its scalar tail both run.
TEST(BatchLayoutTest, NormalisesEveryValueOfLargerImages) {
  Schema s = Schema::create({{"image", DType::kUint8, {3, 5, 7}}}).value_or_throw();
  const std::vector<float> mean = {0.1f, 0.2f, 0.3f}, std = {0.3f, 0.2f, 0.1f};
  auto layout = BatchLayout::create(s, {{"image", true, mean, std}}).value_or_throw();
  std::vector<uint8_t> src(105);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37 + 11);
  std::vector<float> out(105);
  layout.write(0, src.data(), reinterpret_cast<uint8_t*>(out.data()));
  for (size_t i = 0; i < src.size(); ++i) {
    size_t c = i / 35;
    EXPECT_NEAR(out[i], (src[i] / 255.0f - mean[c]) / std[c], 1e-5) << i;
  }
}

// Channels are dim 0 of a [C,H,W] sample only: a [H,W] image is one channel, so 5 means for a
// [5,7] field are an error, and one mean and std make one run over the whole sample (one
// kernel call rather than one per row).
TEST(BatchLayoutTest, TwoDimensionalImagesAreOneChannel) {
  Schema s = Schema::create({{"image", DType::kUint8, {5, 7}}}).value_or_throw();
  EXPECT_FALSE(BatchLayout::create(
                   s, {{"image", true, std::vector<float>(5, 0.1f), std::vector<float>(5, 0.2f)}})
                   .is_ok());
  auto layout = BatchLayout::create(s, {{"image", true, {0.1f}, {0.2f}}}).value_or_throw();
  EXPECT_EQ(layout.fields()[0].run_elements, 35);
  EXPECT_EQ(layout.fields()[0].scale.size(), 1u);
  auto rgb =
      BatchLayout::create(image_schema(), {{"image", true, {0.1f}, {0.2f}}}).value_or_throw();
  EXPECT_EQ(rgb.fields()[0].run_elements, 12);  // one run for 3 channels
}

// Property: write_samples over n back-to-back samples equals n single-sample writes, for one
// run per sample, one run per channel, and a plain copy.
TEST(BatchLayoutTest, WriteSamplesEqualsPerSampleWrites) {
  Schema s = Schema::create({{"image", DType::kUint8, {3, 5, 7}}}).value_or_throw();
  const std::vector<std::vector<FieldRequest>> cases = {
      {{"image", true, {0.3f}, {0.2f}}},
      {{"image", true, {0.1f, 0.2f, 0.3f}, {0.3f, 0.2f, 0.1f}}},
      {{"image"}}};
  std::mt19937 rng(3);
  for (const auto& request : cases) {
    auto layout = BatchLayout::create(s, request).value_or_throw();
    const size_t out_bytes = layout.fields()[0].sample_bytes;
    for (size_t n : {1u, 2u, 9u}) {
      std::vector<uint8_t> src(n * 105);
      for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
      std::vector<uint8_t> together(n * out_bytes), apart(n * out_bytes);
      layout.write_samples(0, src.data(), n, together.data());
      for (size_t k = 0; k < n; ++k)
        layout.write(0, src.data() + k * 105, apart.data() + k * out_bytes);
      EXPECT_EQ(together, apart) << "n = " << n;
    }
  }
}

TEST(BatchLayoutTest, CopiesAsStored) {
  auto layout = BatchLayout::create(image_schema(), {{"label"}, {"image"}}).value_or_throw();
  ASSERT_EQ(layout.find("label"), 0);
  ASSERT_EQ(layout.find("image"), 1);
  int64_t label = -7, copied = 0;
  layout.write(0, reinterpret_cast<uint8_t*>(&label), reinterpret_cast<uint8_t*>(&copied));
  EXPECT_EQ(copied, -7);
  EXPECT_EQ(BatchLayout::copy_all(image_schema()).fields().size(), 2u);  // bytes field left out
}

// write_batch must put every field of every record exactly where write() would, for batch
// sizes below, at and above the prefetch distance and records in any order.
TEST(BatchLayoutTest, WriteBatchMatchesPerSampleWrites) {
  Schema s = image_schema();
  auto layout =
      BatchLayout::create(s, {{"label"}, {"image", true, {0.5f}, {0.25f}}}).value_or_throw();
  EXPECT_EQ(layout.record_bytes_read(), s.fixed_bytes());
  std::mt19937 rng(3);
  const size_t record_bytes = s.fixed_bytes();
  std::vector<uint8_t> store(40 * record_bytes);
  for (uint8_t& b : store) b = static_cast<uint8_t>(rng());
  for (size_t n : {0, 1, 7, 8, 9, 40}) {
    std::vector<const uint8_t*> records;
    for (size_t k = 0; k < n; ++k) records.push_back(&store[(rng() % 40) * record_bytes]);
    const auto& fields = layout.fields();
    std::vector<std::vector<uint8_t>> got, want;
    std::vector<uint8_t*> dst;
    for (const BatchField& f : fields) {
      got.emplace_back(n * f.sample_bytes, 0xAB);
      want.emplace_back(n * f.sample_bytes, 0xCD);
      dst.push_back(got.back().data());
    }
    layout.write_batch(records.data(), n, dst.data());
    for (size_t k = 0; k < n; ++k) {
      for (size_t f = 0; f < fields.size(); ++f) {
        layout.write(static_cast<int>(f), records[k] + fields[f].record_offset,
                     want[f].data() + k * fields[f].sample_bytes);
      }
    }
    EXPECT_EQ(got, want) << "batch of " << n;
  }
}

TEST(BatchLayoutTest, ReadsOnlyTheRequestedPrefixOfARecord) {
  Schema s = image_schema();  // image (12 bytes) then label (8)
  EXPECT_EQ(BatchLayout::create(s, {{"image"}}).value_or_throw().record_bytes_read(), 12u);
  EXPECT_EQ(BatchLayout::create(s, {{"label"}}).value_or_throw().record_bytes_read(), 20u);
}

TEST(BatchLayoutTest, RejectsImpossibleRequests) {
  Schema s = image_schema();
  EXPECT_FALSE(BatchLayout::create(s, {{"nope"}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"jpeg"}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"label", true, {0.f}, {1.f}}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"image", true, {0.f, 0.f}, {1.f, 1.f}}}).is_ok());
  EXPECT_FALSE(BatchLayout::create(s, {{"image", true, {0.f}, {0.f}}}).is_ok());
}

}  // namespace
}  // namespace stoker
