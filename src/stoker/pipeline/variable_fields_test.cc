// Variable fields (Transform::as_variable) through LoaderCore: a stored bytes field delivered as
// uint8 [N] with its lengths, the same for any worker count; padded batches on the grid of their
// largest sample with zeros; samples over the capacity refused naming the record, or skipped
// with their shapes moved along with the samples; a joint transform's fields made in one call
// per sample wherever they stand in the batch; and the grid layout of variable_samples.h.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/pipeline/loader_core.h"
#include "stoker/pipeline/variable_samples.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr int64_t kCaptionRecords = 200;
constexpr int64_t kCaptionCapacity = 8;

// Record i's caption: i % 9 bytes ((i * 31 + j) & 255), but 20 bytes where i % 13 == 12 (more
// than the capacity) when `oversize`.
std::vector<uint8_t> caption(int64_t i, bool oversize) {
  const int64_t n = oversize && i % 13 == 12 ? 20 : i % 9;
  std::vector<uint8_t> out(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) out[j] = static_cast<uint8_t>((i * 31 + j) & 255);
  return out;
}

class VariableFieldsTest : public ::testing::Test {
 protected:
  // {label: int64 = i, caption: bytes}.
  std::shared_ptr<const Dataset> write(const std::string& name, bool oversize) {
    const Schema schema =
        Schema::create({{"label", DType::kInt64, {}}, {"caption", DType::kBytes, {}}})
            .value_or_throw();
    RecordEncoder encoder(schema);
    std::vector<std::vector<uint8_t>> records;
    for (int64_t i = 0; i < kCaptionRecords; ++i) {
      const std::vector<uint8_t> text = caption(i, oversize);
      throw_if_error(encoder.set_fixed(0, &i, sizeof i));
      throw_if_error(encoder.set_bytes(1, text.data(), text.size()));
      records.push_back(encoder.encode());
    }
    testing::write_dataset(dir_ / name, schema, records, 2048);
    return Dataset::open(dir_ / name).value_or_throw();
  }
  static LoaderOptions options(int workers, bool padded) {
    LoaderOptions o;
    o.batch_size = 7;
    o.workers = workers;
    o.seed = 3;
    FieldRequest text("caption", copy_variable_field(1, DType::kUint8, {}, kCaptionCapacity));
    text.padded = padded;
    o.fields = {{"label"}, text};
    return o;
  }
  // Every sample of epoch 0 checked against its record: the labels in order.
  static std::vector<int64_t> check_epoch(LoaderCore& loader, bool padded) {
    std::vector<int64_t> labels;
    LoaderCore::Epoch epoch = loader.epoch(0);
    HostBatch b;
    while (epoch.next(b)) {
      const HostField& text = b["caption"];
      EXPECT_NE(text.sizes, nullptr);
      EXPECT_EQ(text.padded, padded);
      EXPECT_EQ(text.strides[0], kCaptionCapacity);  // one slot per sample
      const auto* label = static_cast<const int64_t*>(b["label"].data);
      int64_t longest = 0;
      for (int64_t k = 0; k < b.size; ++k) {
        const std::vector<uint8_t> want = caption(label[k], false);
        const auto* got = static_cast<const uint8_t*>(text.data) + k * text.strides[0];
        EXPECT_EQ(text.sizes[k], static_cast<int64_t>(want.size())) << "record " << label[k];
        EXPECT_EQ(std::vector<uint8_t>(got, got + text.sizes[k]), want) << "record " << label[k];
        longest = std::max(longest, text.sizes[k]);
        if (padded) {  // zeros up to the batch's longest
          for (int64_t j = text.sizes[k]; j < text.shape[1]; ++j) EXPECT_EQ(got[j], 0);
        }
        labels.push_back(label[k]);
      }
      EXPECT_EQ(text.shape, (std::vector<int64_t>{b.size, longest}));
    }
    return labels;
  }

  testing::TempDir dir_;
};

TEST_F(VariableFieldsTest, BytesAreDeliveredAsStoredWithTheirLengthsForAnyWorkers) {
  auto dataset = write("captions", false);
  for (bool padded : {false, true}) {
    LoaderCore reference(dataset, options(0, padded));
    const std::vector<int64_t> order = check_epoch(reference, padded);
    EXPECT_EQ(order.size(), static_cast<size_t>(kCaptionRecords));
    for (int workers : {1, 3}) {
      LoaderCore loader(dataset, options(workers, padded));
      EXPECT_EQ(check_epoch(loader, padded), order) << workers << " workers";
    }
  }
}

TEST_F(VariableFieldsTest, ASampleOverTheCapacityIsRefusedNamingItOrSkippedWithItsShape) {
  auto dataset = write("long", true);
  for (int workers : {0, 3}) {
    LoaderCore loader(dataset, options(workers, false));
    try {
      check_epoch(loader, false);
      FAIL() << "no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("field 'caption'"), std::string::npos) << what;
      EXPECT_NE(what.find("more than the capacity of 8"), std::string::npos) << what;
      EXPECT_NE(what.find("shard-"), std::string::npos) << what;
      EXPECT_NE(what.find("dataset record "), std::string::npos) << what;
    }
    for (bool padded : {false, true}) {
      LoaderOptions o = options(workers, padded);
      o.on_error = ErrorPolicy::kSkip;
      LoaderCore skipping(dataset, o);
      // Every kept sample's bytes and length are its own record's: the shapes moved with them.
      const std::vector<int64_t> got = check_epoch(skipping, padded);
      EXPECT_EQ(got.size(), static_cast<size_t>(kCaptionRecords - kCaptionRecords / 13));
      for (int64_t label : got) EXPECT_NE(label % 13, 12);
      EXPECT_EQ(skipping.stats().skipped.load(), kCaptionRecords / 13);
    }
  }
}

TEST_F(VariableFieldsTest, RequestsAreChecked) {
  auto dataset = write("checked", false);
  LoaderOptions o = options(0, false);
  o.fields[0].padded = true;  // a fixed field
  EXPECT_THROW(LoaderCore(dataset, o), Error);
}

// A joint transform of two outputs from the caption: "text" (its bytes, uint8 [N]) and "twice"
// (each byte doubled as int64 [N]), counting its calls for each sample of epoch 0 (the engine
// may start the next epoch's first batches early).
class CaptionPair : public JointTransform {
 public:
  const std::vector<Output>& outputs() const override { return outputs_; }
  Status apply(const SampleInput& input, uint8_t* const* slots,
               int64_t* const* shapes) const override {
    if (input.epoch == 0) calls[input.index].fetch_add(1);
    Result<ByteSpan> bytes = variable_field(*input.schema, input.record, 1);
    if (!bytes.is_ok()) return bytes.status();
    const size_t n = bytes.value().size;
    if (n > static_cast<size_t>(kCaptionCapacity))
      return invalid_argument("field 'text': more than the capacity of 8");
    std::memcpy(slots[0], bytes.value().data, n);
    auto* twice = reinterpret_cast<int64_t*>(slots[1]);
    for (size_t j = 0; j < n; ++j) twice[j] = 2 * bytes.value().data[j];
    shapes[0][0] = shapes[1][0] = static_cast<int64_t>(n);
    return Status::ok();
  }
  mutable std::atomic<int> calls[kCaptionRecords] = {};

 private:
  const std::vector<Output> outputs_ = {{"text", DType::kUint8, {kCaptionCapacity}},
                                        {"twice", DType::kInt64, {kCaptionCapacity}}};
};

TEST_F(VariableFieldsTest, AJointTransformMakesItsFieldsInOneCallPerSample) {
  auto dataset = write("joint", false);
  auto joint = std::make_shared<CaptionPair>();
  LoaderOptions o = options(2, false);
  o.fields = {FieldRequest(joint, 1), {"label"}, FieldRequest(joint, 0)};
  o.fields[0].padded = true;
  LoaderCore loader(dataset, o);
  LoaderCore::Epoch epoch = loader.epoch(0);
  HostBatch b;
  int64_t samples = 0;
  while (epoch.next(b)) {
    const auto* label = static_cast<const int64_t*>(b["label"].data);
    const HostField& text = b["text"];
    const HostField& twice = b["twice"];
    EXPECT_TRUE(twice.padded);
    for (int64_t k = 0; k < b.size; ++k, ++samples) {
      const std::vector<uint8_t> want = caption(label[k], false);
      ASSERT_EQ(text.sizes[k], static_cast<int64_t>(want.size()));
      const auto* got = static_cast<const uint8_t*>(text.data) + k * text.strides[0];
      const auto* doubled = static_cast<const int64_t*>(twice.data) + k * twice.strides[0];
      for (size_t j = 0; j < want.size(); ++j) {
        EXPECT_EQ(got[j], want[j]);
        EXPECT_EQ(doubled[j], 2 * want[j]);
      }
    }
  }
  EXPECT_EQ(samples, kCaptionRecords);
  for (int64_t i = 0; i < kCaptionRecords; ++i)  // once a sample, not once a field
    EXPECT_EQ(joint->calls[i].load(), 1) << "record " << i;

  o.fields = {FieldRequest(joint, 0), {"label"}};  // "twice" left out
  EXPECT_THROW(LoaderCore(dataset, o), Error);
  o.fields = {FieldRequest(joint, 0), FieldRequest(joint, 1), FieldRequest(joint, 1)};
  EXPECT_THROW(LoaderCore(dataset, o), Error);
}

// Two int16-sized samples [2, 1, 3] and [2, 3, 2] padded onto [2, 3, 3] in place.
TEST(VariableSamplesTest, SamplesMoveOntoTheLargestGridWithZerosAround) {
  const std::vector<int64_t> shapes = {2, 1, 3, 2, 3, 2};
  int64_t largest[3];
  largest_shape(shapes.data(), 3, 2, largest);
  EXPECT_EQ(std::vector<int64_t>(largest, largest + 3), (std::vector<int64_t>{2, 3, 3}));
  constexpr size_t kSlot = 2 * 4 * 4 * 2;  // a capacity of [2, 4, 4] int16
  std::vector<uint8_t> block(2 * kSlot, 0xee);
  auto* first = reinterpret_cast<int16_t*>(block.data());
  auto* second = reinterpret_cast<int16_t*>(block.data() + kSlot);
  for (int16_t v = 0; v < 6; ++v) first[v] = static_cast<int16_t>(100 + v);
  for (int16_t v = 0; v < 12; ++v) second[v] = static_cast<int16_t>(200 + v);
  pad_samples(block.data(), kSlot, 2, shapes.data(), 3, 2, largest);
  auto expect = [](const int16_t* grid, const int64_t* shape, int16_t base) {
    int16_t next = base;
    for (int c = 0; c < 2; ++c) {
      for (int y = 0; y < 3; ++y) {
        for (int x = 0; x < 3; ++x) {
          const bool inside = y < shape[1] && x < shape[2];
          EXPECT_EQ(grid[(c * 3 + y) * 3 + x], inside ? next++ : 0) << c << "," << y << "," << x;
        }
      }
    }
  };
  expect(first, shapes.data(), 100);
  expect(second, shapes.data() + 3, 200);
}

}  // namespace
}  // namespace stoker
