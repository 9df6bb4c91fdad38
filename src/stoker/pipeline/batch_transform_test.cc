// The batch transform seam (batch_transform.h): run once on each finished batch by the worker
// that finalises it, after skip compaction, drawing from the batch's own stream; a field it
// retypes (the label to soft targets) has its new dtype and shape in the batch; the same bytes
// for any worker count and after a restore; a failure fails the batch naming the operation.
#include "stoker/pipeline/batch_transform.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "stoker/pipeline/loader_core.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/loader_fixture.h"

namespace stoker {
namespace {

// Makes the label int64 [3]: the batch stream's first word, the batch's size and the label.
class BatchEcho : public BatchTransform {
 public:
  Result<std::vector<BatchFieldType>> outputs(
      const std::vector<BatchFieldType>& fields) const override {
    std::vector<BatchFieldType> out = fields;
    out.back().sample_shape = {3};
    return out;
  }
  Status apply(const BatchInput& input) const override {
    const BatchFieldData& label = input.fields.back();
    std::vector<int64_t> labels(static_cast<size_t>(input.size));
    for (size_t k = 0; k < labels.size(); ++k)
      std::memcpy(&labels[k], label.data + k * label.stride, sizeof(int64_t));
    const auto first = static_cast<int64_t>(input.rng().next_u64());
    auto* out = reinterpret_cast<int64_t*>(label.data);
    for (size_t k = 0; k < labels.size(); ++k) {
      out[3 * k] = first;
      out[3 * k + 1] = input.size;
      out[3 * k + 2] = labels[k];
    }
    return Status::ok();
  }
};

// The stored label (int64 at record offset 4), failing the samples of label 5.
class LabelFailingOnFive : public Transform {
 public:
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput& in, uint8_t* slot) const override {
    int64_t label;
    std::memcpy(&label, in.record.data + 4, sizeof label);
    if (label == 5) return corrupt("label five");
    std::memcpy(slot, &label, sizeof label);
    return Status::ok();
  }
};

std::shared_ptr<const BatchTransform> registry_batch(const std::string& text) {
  const OpCall call = parse_op_call(text).value();
  return call.op->make_batch(call.params).value();
}

class BatchTransformTest : public testing::LoaderFixture {
 protected:
  LoaderOptions with(std::shared_ptr<const BatchTransform> batch, WorkerCount workers) {
    LoaderOptions o = options(workers);
    o.batch_transform = std::move(batch);
    return o;
  }
  // Every byte of the batches of epoch e from its position, and each batch's size.
  static std::vector<uint8_t> epoch_bytes(LoaderCore& loader, int64_t e, int64_t max_batches = -1) {
    std::vector<uint8_t> out;
    LoaderCore::Epoch epoch = loader.epoch(e);
    HostBatch b;
    for (int64_t n = 0; n != max_batches && epoch.next(b); ++n)
      for (size_t f = 0; f < b.fields.size(); ++f) {
        const auto* p = static_cast<const uint8_t*>(b.fields[f].data);
        out.insert(out.end(), p, p + b.size * loader.layout().fields()[f].sample_bytes);
      }
    return out;
  }
};

TEST_F(BatchTransformTest, RunsOncePerBatchOnItsOwnStreamWithTheFieldRetyped) {
  LoaderCore loader(dataset_, with(std::make_shared<BatchEcho>(), 2));
  const BatchField& label = loader.layout().fields()[1];
  EXPECT_EQ(label.sample_shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(label.written.sample_shape, (std::vector<int64_t>{}));
  EXPECT_EQ(label.slot_bytes, 24u);
  LoaderCore plain(dataset_, options(2));
  LoaderCore::Epoch plain_epoch = plain.epoch(1);
  LoaderCore::Epoch epoch = loader.epoch(1);
  HostBatch b, p;
  int64_t position = 0;
  while (epoch.next(b)) {
    ASSERT_TRUE(plain_epoch.next(p));
    EXPECT_EQ(b["label"].shape, (std::vector<int64_t>{b.size, 3}));
    position += b.size;
    const auto* out = static_cast<const int64_t*>(b["label"].data);
    const auto* labels = static_cast<const int64_t*>(p["label"].data);
    const auto first = static_cast<int64_t>(CounterRng(5, batch_stream(1, position, 0)).next_u64());
    for (int64_t k = 0; k < b.size; ++k) {
      EXPECT_EQ(out[3 * k], first);
      EXPECT_EQ(out[3 * k + 1], b.size);
      EXPECT_EQ(out[3 * k + 2], labels[k]);
    }
  }
  EXPECT_EQ(position, kRecords);
}

TEST_F(BatchTransformTest, SeesTheBatchAfterSkippedSamplesAreDropped) {
  LoaderOptions o = with(std::make_shared<BatchEcho>(), 3);
  o.on_error = ErrorPolicy::kSkip;
  o.fields = {{"image", true, {0.5f}, {0.5f}}, {"label", std::make_shared<LabelFailingOnFive>()}};
  LoaderCore loader(dataset_, o);
  LoaderCore::Epoch epoch = loader.epoch(0);
  HostBatch b;
  int64_t samples = 0, skipped = 0;
  while (epoch.next(b)) {
    const auto* out = static_cast<const int64_t*>(b["label"].data);
    for (int64_t k = 0; k < b.size; ++k) {
      EXPECT_EQ(out[3 * k + 1], b.size);
      EXPECT_NE(out[3 * k + 2], 5);
    }
    samples += b.size;
    skipped += b.skipped;
  }
  EXPECT_EQ(skipped, 1);  // label 5: record 5 alone (labels are index % 1000)
  EXPECT_EQ(samples, kRecords - 1);
}

TEST_F(BatchTransformTest, SameBytesForAnyWorkerCountAndAfterARestore) {
  const auto mixup = registry_batch("mixup:alpha=0.4,num_classes=1000");
  LoaderCore reference(dataset_, with(mixup, 0));
  const std::vector<uint8_t> expected = epoch_bytes(reference, 2);
  for (int workers : {1, 3}) {
    LoaderCore loader(dataset_, with(mixup, workers));
    EXPECT_EQ(epoch_bytes(loader, 2), expected) << workers;
  }
  LoaderCore first(dataset_, with(mixup, 2));
  const std::vector<uint8_t> head = epoch_bytes(first, 2, 20);
  LoaderCore second(dataset_, with(mixup, 3));
  second.restore(first.state());
  std::vector<uint8_t> resumed = head;
  const std::vector<uint8_t> rest = epoch_bytes(second, 2);
  resumed.insert(resumed.end(), rest.begin(), rest.end());
  EXPECT_EQ(resumed, expected);
  LoaderCore other(dataset_, with(mixup, 2));
  EXPECT_NE(epoch_bytes(other, 3), expected);
}

TEST_F(BatchTransformTest, MixupMakesSoftTargetsOfTheBatchsLabels) {
  LoaderCore loader(dataset_, with(registry_batch("mixup:alpha=1,num_classes=1000"), 2));
  LoaderCore plain(dataset_, options(2));
  LoaderCore::Epoch epoch = loader.epoch(0);
  LoaderCore::Epoch plain_epoch = plain.epoch(0);
  HostBatch b, p;
  ASSERT_TRUE(epoch.next(b));
  ASSERT_TRUE(plain_epoch.next(p));
  EXPECT_EQ(b["label"].dtype, DType::kFloat32);
  EXPECT_EQ(b["label"].shape, (std::vector<int64_t>{16, 1000}));
  const auto* targets = static_cast<const float*>(b["label"].data);
  const auto* labels = static_cast<const int64_t*>(p["label"].data);
  for (int64_t k = 0; k < 16; ++k) {
    const int64_t previous = labels[(k + 15) % 16];
    double sum = 0;
    for (int64_t c = 0; c < 1000; ++c) sum += targets[k * 1000 + c];
    EXPECT_NEAR(sum, 1.0, 1e-6);
    EXPECT_GT(targets[k * 1000 + labels[k]] + targets[k * 1000 + previous], 0.999f);
  }
  EXPECT_NE(std::memcmp(b["image"].data, p["image"].data, 16 * 4 * sizeof(float)), 0);
}

TEST_F(BatchTransformTest, ALabelOutOfRangeFailsTheBatchNamingTheOperation) {
  LoaderCore loader(dataset_, with(registry_batch("cutmix:num_classes=10"), 2));
  LoaderCore::Epoch epoch = loader.epoch(0);
  HostBatch b;
  try {
    epoch.next(b);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cutmix: label"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("num_classes = 10"), std::string::npos) << e.what();
  }
}

TEST_F(BatchTransformTest, FieldsItCannotMixAreRefusedWhenTheLoaderIsMade) {
  LoaderOptions o = with(registry_batch("mixup:num_classes=1000"), 0);
  o.fields = {{"label"}};
  try {
    LoaderCore loader(dataset_, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mixup needs one float32 image field"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stoker
