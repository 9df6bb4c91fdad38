#include "stoker/pipeline/batch_layout.h"

#include <gtest/gtest.h>

#include <cmath>

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

TEST(BatchLayoutTest, CopiesAsStored) {
  auto layout = BatchLayout::create(image_schema(), {{"label"}, {"image"}}).value_or_throw();
  ASSERT_EQ(layout.find("label"), 0);
  ASSERT_EQ(layout.find("image"), 1);
  int64_t label = -7, copied = 0;
  layout.write(0, reinterpret_cast<uint8_t*>(&label), reinterpret_cast<uint8_t*>(&copied));
  EXPECT_EQ(copied, -7);
  EXPECT_EQ(BatchLayout::copy_all(image_schema()).fields().size(), 2u);  // bytes field left out
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
