// record_view.h: decoding bytes fields from a record's bytes, well-formed and not; record_views.h:
// a viewed reader's fields widened from its views, its records built from them the same.
#include "stoker/store/record_view.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstring>
#include <string>
#include <vector>

#include "stoker/store/record_encoder.h"
#include "stoker/store/record_views.h"
#include "stoker/store/shard_reader.h"

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

TEST(RecordViews, AViewedReaderWidensItsViewsAndBuildsTheSameRecords) {
  // Records of 8 bytes: three int16s (a: the first two, b: the last two, overlapping a) of
  // values that widen signed, then two bytes (c, a uint8 field viewed as itself).
  const std::vector<std::vector<int16_t>> shorts{{-5, 300, -32768}, {32767, 0, -1}};
  auto bytes = std::make_shared<std::vector<uint8_t>>(16);
  for (size_t r = 0; r < 2; ++r) {
    std::memcpy(bytes->data() + 8 * r, shorts[r].data(), 6);
    (*bytes)[8 * r + 6] = static_cast<uint8_t>(10 + r);
    (*bytes)[8 * r + 7] = static_cast<uint8_t>(20 + r);
  }
  const Schema schema =
      Schema::create(
          {{"a", DType::kInt64, {2}}, {"b", DType::kInt64, {2}}, {"c", DType::kUint8, {2}}})
          .value_or_throw();
  RecordViews views;
  views.base = bytes->data();
  views.stride = 8;
  views.fields = {{StoredType::kInt16, 0, DType::kInt64},
                  {StoredType::kInt16, 2, DType::kInt64},
                  {StoredType::kUint8, 6, DType::kUint8}};
  views.hold = bytes;
  const ShardReader reader = ShardReader::viewed("v", schema, 2, views).value_or_throw();
  ASSERT_NE(reader.views(), nullptr);
  EXPECT_EQ(reader.records(), 2u);
  for (uint64_t i = 0; i < 2; ++i) {
    int64_t a[2], b[2];
    uint8_t c[2];
    reader.views()->write(i, 0, 2, reinterpret_cast<uint8_t*>(a));
    reader.views()->write(i, 1, 2, reinterpret_cast<uint8_t*>(b));
    reader.views()->write(i, 2, 2, c);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(a[k], shorts[i][k]) << i;
      EXPECT_EQ(b[k], shorts[i][k + 1]) << i;
      EXPECT_EQ(c[k], (k == 0 ? 10 : 20) + i) << i;
    }
    // The built record holds the same values in stoker's layout; nothing to verify against.
    const ByteSpan record = reader.record(i);
    ASSERT_EQ(record.size, schema.fixed_bytes());
    EXPECT_EQ(std::memcmp(fixed_field(schema, record, 0), a, sizeof a), 0);
    EXPECT_EQ(std::memcmp(fixed_field(schema, record, 1), b, sizeof b), 0);
    EXPECT_EQ(std::memcmp(fixed_field(schema, record, 2), c, sizeof c), 0);
    EXPECT_TRUE(reader.verify_record(i).is_ok());
  }
  // A view not of its field's type: an int16 view of the uint8 field.
  views.fields[2] = {StoredType::kInt16, 6, DType::kUint8};
  EXPECT_EQ(ShardReader::viewed("v", schema, 2, views).status().code(), StatusCode::kInternal);
}

// Elements of type T at `bytes` widened, element by element, as the reference.
template <typename T>
std::vector<int64_t> widened_one_by_one(const uint8_t* bytes, size_t n) {
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    out[i] = static_cast<int64_t>(value);
  }
  return out;
}

// The widening is vectorised per CPU (widen_int64.cc), by hand on AVX2 and AVX-512: on every
// target Highway compiled that this CPU runs, every length around its vectors' (up to 64
// elements a step) and its blocks' (256), from and to odd addresses, with bytes to prefetch
// or none, gives the reference's values, signed ones sign-extended, and writes nothing past
// its n.
TEST(RecordViews, WideningGivesEachElementsValueAtAnyLengthAndAlignment) {
  std::vector<uint8_t> source(8 * 600 + 1);
  uint64_t state = 12345;
  for (uint8_t& b : source)
    b = static_cast<uint8_t>((state = state * 6364136223846793005u + 1) >> 56);
  const struct {
    StoredType type;
    std::vector<int64_t> (*reference)(const uint8_t*, size_t);
  } types[] = {{StoredType::kUint8, widened_one_by_one<uint8_t>},
               {StoredType::kInt8, widened_one_by_one<int8_t>},
               {StoredType::kUint16, widened_one_by_one<uint16_t>},
               {StoredType::kInt16, widened_one_by_one<int16_t>},
               {StoredType::kUint32, widened_one_by_one<uint32_t>},
               {StoredType::kInt32, widened_one_by_one<int32_t>},
               {StoredType::kInt64, widened_one_by_one<int64_t>},
               {StoredType::kUint64, widened_one_by_one<int64_t>}};
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (const int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    for (const auto& t : types) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{7}, size_t{15}, size_t{16},
                       size_t{17}, size_t{31}, size_t{63}, size_t{64}, size_t{65}, size_t{129},
                       size_t{255}, size_t{256}, size_t{257}, size_t{299}, size_t{599}}) {
        for (const ByteSpan ahead : {ByteSpan{}, ByteSpan{source.data() + 3, 4099}}) {
          std::vector<uint8_t> out(8 * n + 9, 0xAB);
          widen_to_int64(t.type, source.data() + 1, n, out.data() + 1, ahead);
          const std::vector<int64_t> expected = t.reference(source.data() + 1, n);
          std::vector<int64_t> got(n);
          if (n > 0) std::memcpy(got.data(), out.data() + 1, 8 * n);
          EXPECT_EQ(got, expected)
              << hwy::TargetName(target) << " type " << static_cast<int>(t.type) << " n " << n;
          EXPECT_EQ(out[0], 0xAB);
          for (size_t k = 8 * n + 1; k < out.size(); ++k) EXPECT_EQ(out[k], 0xAB) << k;
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);  // the CPU's own again
}

}  // namespace
}  // namespace stoker
