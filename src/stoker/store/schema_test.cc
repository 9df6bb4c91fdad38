#include "stoker/store/schema.h"

#include <gtest/gtest.h>

#include "stoker/testing/records.h"

namespace stoker {
namespace {

TEST(SchemaTest, FixedFieldsArePackedInOrderBeforeTheLengthTable) {
  Schema s = Schema::create({{"image", DType::kUint8, {1, 28, 28}},
                             {"jpeg", DType::kBytes, {}},
                             {"label", DType::kInt64, {}},
                             {"box", DType::kFloat32, {4}}})
                 .value_or_throw();
  EXPECT_EQ(s.fixed_offset(0), 0u);
  EXPECT_EQ(s.fixed_offset(2), 784u);
  EXPECT_EQ(s.fixed_offset(3), 792u);
  EXPECT_EQ(s.fixed_bytes(), 808u);
  EXPECT_EQ(s.num_variable(), 1);
  EXPECT_EQ(s.min_record_bytes(), 812u);
  EXPECT_EQ(s.find("label"), 2);
  EXPECT_EQ(s.find("nope"), -1);
}

TEST(SchemaTest, JsonRoundTripsForRandomSchemas) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200; ++i) {
    Schema s = testing::random_schema(rng);
    Schema back = Schema::from_json(s.to_json(), "test").value_or_throw();
    EXPECT_EQ(back, s);
    EXPECT_EQ(back.fixed_bytes(), s.fixed_bytes());
  }
}

TEST(SchemaTest, RejectsBadSchemas) {
  EXPECT_FALSE(Schema::create({}).is_ok());
  EXPECT_FALSE(Schema::create({{"a", DType::kUint8, {}}, {"a", DType::kInt64, {}}}).is_ok());
  EXPECT_FALSE(Schema::create({{"", DType::kUint8, {}}}).is_ok());
  EXPECT_FALSE(Schema::create({{"a", DType::kUint8, {0}}}).is_ok());
  EXPECT_FALSE(Schema::create({{"a", DType::kBytes, {3}}}).is_ok());
}

TEST(SchemaTest, MalformedJsonIsCorruptNamingTheOrigin) {
  for (const char* text : {"", "{", "[]", R"({"fields": [{"name": "a", "dtype": "int13"}]})",
                           R"({"fields": [{"name": "a"}]})",
                           R"({"fields": [{"name": "a", "dtype": "uint8", "shape": [-1]}]})"}) {
    auto s = Schema::from_json(text, "somefile.stk");
    ASSERT_FALSE(s.is_ok()) << text;
    EXPECT_EQ(s.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(s.status().message().find("somefile.stk"), std::string::npos);
  }
}

}  // namespace
}  // namespace stoker
