#include "stoker/store/image_record.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(ImageRecordTest, TheSchemaHoldsTheImageAndItsScalarsInOrder) {
  const Schema schema = image_record_schema();
  std::vector<std::string> names;
  for (const Field& f : schema.fields()) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"image", "label", "height", "width", "original_size",
                                             "original_checksum"}));
  EXPECT_EQ(schema.num_variable(), 1);
  EXPECT_EQ(schema.fixed_bytes(), 5u * 8);
  const ImageRecordFields fields = ImageRecordFields::find(schema).value_or_throw();
  EXPECT_EQ(fields.image, 0);
  EXPECT_EQ(fields.label, 1);
  EXPECT_EQ(fields.height, 2);
  EXPECT_EQ(fields.width, 3);
  EXPECT_EQ(fields.original_size, 4);
  EXPECT_EQ(fields.original_checksum, 5);
}

TEST(ImageRecordTest, FindsFieldsByNameInAnyOrder) {
  const Schema schema = Schema::create({{"width", DType::kInt64, {}},
                                        {"extra", DType::kUint8, {4}},
                                        {"original_checksum", DType::kInt64, {}},
                                        {"label", DType::kInt64, {}},
                                        {"image", DType::kBytes, {}},
                                        {"height", DType::kInt64, {}},
                                        {"original_size", DType::kInt64, {}}})
                            .value_or_throw();
  const ImageRecordFields fields = ImageRecordFields::find(schema).value_or_throw();
  EXPECT_EQ(fields.image, 4);
  EXPECT_EQ(fields.width, 0);
  EXPECT_EQ(fields.height, 5);
  EXPECT_EQ(fields.label, 3);
}

TEST(ImageRecordTest, OtherSchemasAreNamedForWhatTheyLack) {
  const auto fails = [](std::vector<Field> fields, const std::string& words) {
    auto found = ImageRecordFields::find(Schema::create(std::move(fields)).value_or_throw());
    ASSERT_FALSE(found.is_ok());
    EXPECT_EQ(found.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(found.status().message().find(words), std::string::npos) << found.status().message();
  };
  // Fashion-MNIST's schema: the image is a fixed field.
  fails({{"image", DType::kUint8, {1, 28, 28}}, {"label", DType::kInt64, {}}},
        "no bytes field 'image'");
  fails({{"image", DType::kBytes, {}}, {"label", DType::kInt64, {}}}, "'height'");
  std::vector<Field> fields = image_record_schema().fields();
  fields[3].shape = {2};
  fails(fields, "no int64 scalar field 'width'");
}

}  // namespace
}  // namespace stoker
