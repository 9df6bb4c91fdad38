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

TEST(SchemaTest, DtypeNamesRoundTrip) {
  for (DType dtype : {DType::kUint8, DType::kInt64, DType::kFloat32, DType::kBytes})
    EXPECT_EQ(dtype_from_name(dtype_name(dtype)), dtype);
  EXPECT_EQ(dtype_from_name("float64"), std::nullopt);
  EXPECT_EQ(dtype_from_name("UINT8"), std::nullopt);
  EXPECT_EQ(dtype_from_name(""), std::nullopt);
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

TEST(SchemaTest, SizesAreCheckedWithoutOverflow) {
  // 4 GiB exactly is the limit of a field and of the fixed part.
  Schema big = Schema::create({{"a", DType::kUint8, {65536, 65536}}, {"b", DType::kBytes, {}}})
                   .value_or_throw();
  EXPECT_EQ(big.fixed_bytes(), kMaxFixedBytes);
  EXPECT_EQ(big.min_record_bytes(), kMaxFixedBytes + 4);
  struct Case {
    std::vector<Field> fields;
    const char* error;
  };
  const int64_t max = kMaxDimension;
  const std::vector<Case> cases = {
      // 2^93 elements: the product wraps around 2^64 (to 0) unless checked.
      {{{"a", DType::kUint8, {max, max, max}}}, "schema field 'a' takes more than 4 GiB"},
      {{{"a", DType::kFloat32, {65536, 16385}}}, "schema field 'a' takes more than 4 GiB"},
      {{{"a", DType::kUint8, {65536, 65536}}, {"b", DType::kUint8, {}}},
       "schema: the fixed fields take more than 4 GiB per record"},
      {{{"a", DType::kUint8, {max + 1}}},
       "schema field 'a': dimension out of range (2147483649; each is 1 to 2^31)"},
      {{{"a", DType::kUint8, {2, -3}}},
       "schema field 'a': dimension out of range (-3; each is 1 to 2^31)"},
      {{{"a", DType::kUint8, {0, 4}}},
       "schema field 'a': dimension out of range (0; each is 1 to 2^31)"},
  };
  for (const Case& c : cases) {
    Result<Schema> s = Schema::create(c.fields);
    ASSERT_FALSE(s.is_ok()) << c.error;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), c.error);
  }
  auto overflow = Schema::from_json(
      R"({"fields":[{"dtype":"int64","name":"a","shape":[2147483648,2147483648,2147483648]}]})",
      "x/manifest.json");
  ASSERT_FALSE(overflow.is_ok());
  EXPECT_EQ(overflow.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(overflow.status().message(), "x/manifest.json: schema field 'a' takes more than 4 GiB");
}

TEST(SchemaTest, JsonLongerThanTheLimitIsRefusedUnparsed) {
  std::string text = Schema::create({{"a", DType::kUint8, {}}}).value_or_throw().to_json();
  text.append(kMaxSchemaJsonBytes - text.size(), ' ');
  EXPECT_TRUE(Schema::from_json(text, "x.stk").is_ok());
  text += ' ';
  auto s = Schema::from_json(text, "x.stk");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.status().message(), "x.stk: schema JSON of 1048577 bytes, more than 1048576");
}

TEST(SchemaTest, MalformedJsonIsCorruptNamingTheOrigin) {
  for (const char* text : {"", "{", "[]", R"({"fields": [{"name": "a", "dtype": "int13"}]})",
                           R"({"fields": [{"name": "a"}]})",
                           R"({"fields": [{"name": "a", "dtype": "uint8", "shape": [-1]}]})",
                           R"({"fields": [{"name": "a", "dtype": "uint8", "shape": [2.0]}]})",
                           // 2^64 - 1: not an int64 dimension.
                           R"({"fields": [{"name": "a", "dtype": "uint8",
                                           "shape": [18446744073709551615]}]})"}) {
    auto s = Schema::from_json(text, "somefile.stk");
    ASSERT_FALSE(s.is_ok()) << text;
    EXPECT_EQ(s.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(s.status().message().find("somefile.stk"), std::string::npos);
  }
}

// Names and dtypes reach one-line error messages: control characters never break the line.
TEST(SchemaTest, ControlCharactersNeverSplitAnErrorLine) {
  for (const char* text :
       {R"({"fields": [{"name": "a", "dtype": "\nt64"}]})",
        R"({"fields": [{"name": "a\nb", "dtype": "uint8"}]})",
        R"({"fields": [{"name": "a\u007f", "dtype": "uint8", "shape": [1]}]})"}) {
    auto s = Schema::from_json(text, "somefile.stk");
    ASSERT_FALSE(s.is_ok()) << text;
    EXPECT_EQ(s.status().message().find('\n'), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find("somefile.stk"), std::string::npos);
  }
  EXPECT_FALSE(Schema::create({{"tab\there", DType::kUint8, {1}}}).is_ok());
}

}  // namespace
}  // namespace stoker
