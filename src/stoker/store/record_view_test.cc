// record_view.h: decoding bytes fields from a record's bytes, well-formed and not.
#include "stoker/store/record_view.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "stoker/store/record_encoder.h"

namespace stoker {
namespace {

class RecordViewTest : public ::testing::Test {
 protected:
  RecordViewTest()
      : schema_(
            Schema::create(
                {{"a", DType::kBytes, {}}, {"label", DType::kInt64, {}}, {"b", DType::kBytes, {}}})
                .value_or_throw()) {
    RecordEncoder encoder(schema_);
    const int64_t label = 7;
    throw_if_error(encoder.set_bytes(0, "xyz", 3));
    throw_if_error(encoder.set_fixed(1, &label, 8));
    throw_if_error(encoder.set_bytes(2, "hello", 5));
    record_ = encoder.encode();
  }
  ByteSpan span() const { return {record_.data(), record_.size()}; }
  static std::string str(ByteSpan s) { return {reinterpret_cast<const char*>(s.data), s.size}; }

  Schema schema_;
  std::vector<uint8_t> record_;
};

TEST_F(RecordViewTest, FieldsComeBackAsEncoded) {
  ASSERT_EQ(record_.size(), 8u + 4 + 4 + 3 + 5);
  EXPECT_EQ(str(variable_field(schema_, span(), 0).value_or_throw()), "xyz");
  EXPECT_EQ(str(variable_field(schema_, span(), 2).value_or_throw()), "hello");
  int64_t label = 0;
  std::memcpy(&label, fixed_field(schema_, span(), 1), 8);
  EXPECT_EQ(label, 7);
}

TEST_F(RecordViewTest, FixedOrMissingFieldIsInvalidArgument) {
  EXPECT_EQ(variable_field(schema_, span(), 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(variable_field(schema_, span(), 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(variable_field(schema_, span(), -1).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RecordViewTest, LengthRunningPastTheRecordIsCorruptNamingTheField) {
  const uint32_t too_long = 6;  // b's payload is 5 bytes and ends the record
  std::memcpy(record_.data() + 12, &too_long, 4);
  EXPECT_EQ(str(variable_field(schema_, span(), 0).value_or_throw()), "xyz");
  Status s = variable_field(schema_, span(), 2).status();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("field 'b'"), std::string::npos) << s.message();
}

TEST_F(RecordViewTest, EarlierLengthRunningPastTheRecordFailsLaterFields) {
  const uint32_t huge = 0xffffffffu;
  std::memcpy(record_.data() + 8, &huge, 4);
  Status s = variable_field(schema_, span(), 2).status();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("field 'a'"), std::string::npos) << s.message();
}

TEST_F(RecordViewTest, RecordShorterThanItsLengthTableIsCorrupt) {
  for (size_t size = 0; size < schema_.min_record_bytes(); ++size) {
    Status s = variable_field(schema_, ByteSpan{record_.data(), size}, 0).status();
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << size;
  }
}

TEST_F(RecordViewTest, EncodedRecordHasItsLayout) {
  EXPECT_TRUE(check_record_layout(schema_, span()).is_ok());
}

TEST_F(RecordViewTest, TrailingBytesBreakTheLayout) {
  record_.push_back(0);
  Status s = check_record_layout(schema_, span());
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("fields end at byte 24 of a 25-byte record"), std::string::npos)
      << s.message();
}

TEST_F(RecordViewTest, ShortOrLongLengthsBreakTheLayout) {
  for (uint32_t b_length : {4u, 6u}) {
    std::memcpy(record_.data() + 12, &b_length, 4);
    EXPECT_EQ(check_record_layout(schema_, span()).code(), StatusCode::kCorrupt) << b_length;
  }
  EXPECT_EQ(check_record_layout(schema_, ByteSpan{record_.data(), 10}).code(),
            StatusCode::kCorrupt);
}

}  // namespace
}  // namespace stoker
