// Loader, the LibTorch adapter over LoaderCore (whose own tests cover order, resume, options and
// errors under the sanitizers): tensors, worker-count independence, errors, lifetimes.
#include "stoker/pipeline/loader.h"

#include <ATen/ops/equal.h>
#include <gtest/gtest.h>

#include "stoker/testing/loader_fixture.h"
#include "stoker/testing/records.h"

namespace stoker {
namespace {

class LoaderTest : public testing::LoaderFixture {
 protected:
  // Label (== record index % 1000) of every sample of epoch e, in order.
  static std::vector<int64_t> labels(Loader& loader, int64_t e, int64_t max_batches = -1) {
    std::vector<int64_t> out;
    int64_t n = 0;
    for (Batch& b : loader.epoch(e)) {
      auto l = b["label"].contiguous();
      out.insert(out.end(), l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + b.size());
      if (++n == max_batches) break;
    }
    return out;
  }
};

TEST_F(LoaderTest, BatchesAreTensorsOfTheRightShapeTypeAndValue) {
  Loader loader(dataset_, options(2));
  EXPECT_EQ(loader.batches_per_epoch(), (kRecords + 15) / 16);
  int64_t seen = 0;
  for (Batch& b : loader.epoch(0)) {
    const at::Tensor& image = b["image"];
    const at::Tensor& label = b["label"];
    EXPECT_EQ(image.scalar_type(), at::kFloat);
    EXPECT_EQ(label.scalar_type(), at::kLong);
    EXPECT_EQ(image.sizes(), (std::vector<int64_t>{b.size(), 1, 2, 2}));
    for (int64_t k = 0; k < b.size(); ++k) {
      // image pixel p of record i is (i*4+p) mod 256; the label is i mod 1000 (i < 1003).
      const int64_t l = label[k].item<int64_t>();
      const float first = image[k][0][0][0].item<float>();
      const bool matches = std::abs(first - ((l * 4 % 256) / 255.0f - 0.5f) / 0.5f) < 1e-5 ||
                           std::abs(first - (((l + 1000) * 4 % 256) / 255.0f - 0.5f) / 0.5f) < 1e-5;
      EXPECT_TRUE(matches) << l;
    }
    seen += b.size();
    EXPECT_THROW(b["nope"], Error);
  }
  EXPECT_EQ(seen, kRecords);
}

TEST_F(LoaderTest, SameBatchesForAnyWorkerCount) {
  Loader reference(dataset_, options(0));
  const auto expected = labels(reference, 3);
  for (int workers : {1, 2, 4, 8}) {
    Loader loader(dataset_, options(workers));
    EXPECT_EQ(labels(loader, 3), expected) << workers;
  }
  Loader other_epoch(dataset_, options(2));
  EXPECT_NE(labels(other_epoch, 4), expected);
}

TEST_F(LoaderTest, CorruptRecordRaisesNamingItOrIsSkipped) {
  auto [shard, offset] = testing::record_location(dir_ / "ds", 400);
  testing::flip_byte(shard, offset);
  dataset_ = Dataset::open(dir_ / "ds").value_or_throw();
  for (int workers : {0, 2}) {
    Loader loader(dataset_, options(workers));
    try {
      for (Batch& b : loader.epoch(0)) (void)b;
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dataset record 400"), std::string::npos) << e.what();
    }
    LoaderOptions skip = options(workers);
    skip.on_error = ErrorPolicy::kSkip;
    Loader skipping(dataset_, skip);
    int64_t samples = 0;
    for (Batch& b : skipping.epoch(0)) samples += b.size();
    EXPECT_EQ(samples, kRecords - 1);
    EXPECT_EQ(skipping.stats().skipped.load(), 1);
  }
}

TEST_F(LoaderTest, TensorsOutliveTheLoader) {
  at::Tensor kept;
  std::map<std::string, at::Tensor> copy;
  {
    Loader loader(dataset_, options(2));
    auto range = loader.epoch(0);
    Batch& b = *range.begin();
    kept = b["label"];
    copy = b.clone();
  }
  EXPECT_TRUE(at::equal(kept, copy["label"]));
}

// A bytes field as uint8 [N] (copy_variable_field): samples() are the stored bytes, list-laid
// or padded; sizes() their lengths; the padded tensor has zeros past each; operator[] and
// host() refuse the list form; host() gives the fields as operator[] does (on the CPU).
TEST_F(LoaderTest, VariableFieldsGiveTheirSamplesAndSizes) {
  const Schema schema =
      Schema::create({{"label", DType::kInt64, {}}, {"text", DType::kBytes, {}}}).value_or_throw();
  RecordEncoder encoder(schema);
  std::vector<std::vector<uint8_t>> records;
  const auto text_of = [](int64_t i) { return std::vector<uint8_t>(i % 5, uint8_t(i + 1)); };
  for (int64_t i = 0; i < 30; ++i) {
    const std::vector<uint8_t> text = text_of(i);
    throw_if_error(encoder.set_fixed(0, &i, sizeof i));
    throw_if_error(encoder.set_bytes(1, text.data(), text.size()));
    records.push_back(encoder.encode());
  }
  testing::write_dataset(dir_ / "texts", schema, records);
  auto texts = Dataset::open(dir_ / "texts").value_or_throw();
  for (bool padded : {false, true}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.workers = 2;
    FieldRequest text("text", copy_variable_field(1, DType::kUint8, {}, 6));
    text.padded = padded;
    o.fields = {{"label"}, text};
    Loader loader(texts, o);
    int64_t seen = 0;
    for (Batch& b : loader.epoch(0)) {
      const std::vector<at::Tensor> samples = b.samples("text");
      const at::Tensor sizes = b.sizes("text");
      ASSERT_EQ(static_cast<int64_t>(samples.size()), b.size());
      for (int64_t k = 0; k < b.size(); ++k, ++seen) {
        const int64_t label = b["label"][k].item<int64_t>();
        const std::vector<uint8_t> want = text_of(label);
        EXPECT_EQ(sizes[k][0].item<int64_t>(), static_cast<int64_t>(want.size()));
        const at::Tensor got = samples[k].contiguous();
        EXPECT_EQ(
            std::vector<uint8_t>(got.data_ptr<uint8_t>(), got.data_ptr<uint8_t>() + got.numel()),
            want);
        if (padded) {
          EXPECT_EQ(b["text"][k].slice(0, static_cast<int64_t>(want.size())).sum().item<int64_t>(),
                    0);
        }
      }
      EXPECT_TRUE(at::equal(b.host("label"), b["label"]));
      if (!padded) {
        EXPECT_THROW(b["text"], Error);
        EXPECT_THROW(b.host("text"), Error);
      } else {
        EXPECT_TRUE(at::equal(b.host("text"), b["text"]));
      }
      EXPECT_THROW(b.host("image"), Error);
      EXPECT_THROW(b.samples("label"), Error);
    }
    EXPECT_EQ(seen, 30);
  }
}

}  // namespace
}  // namespace stoker
