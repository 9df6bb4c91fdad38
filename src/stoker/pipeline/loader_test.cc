// Loader: tensors, determinism, resume (same and other world size), errors, lifetimes.
#include "stoker/pipeline/loader.h"

#include <gtest/gtest.h>

#include <set>

#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr int64_t kRecords = 1003;

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_labelled_dataset(dir_ / "ds", kRecords, 1000, 4096);
    dataset_ = Dataset::open(dir_ / "ds").value_or_throw();
  }
  LoaderOptions options(int workers, int rank = 0, int world = 1) {
    LoaderOptions o;
    o.batch_size = 16;
    o.workers = workers;
    o.seed = 5;
    o.rank = rank;
    o.world_size = world;
    o.fields = {{"image", true, {0.5f}, {0.5f}}, {"label"}};
    return o;
  }
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
  testing::TempDir dir_;
  std::shared_ptr<const Dataset> dataset_;
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

TEST_F(LoaderTest, StateAndRestoreContinueByteIdentical) {
  for (int workers : {0, 2}) {
    Loader full(dataset_, options(workers));
    std::vector<at::Tensor> all;
    for (Batch& b : full.epoch(1)) all.push_back(b["image"].clone());

    Loader first(dataset_, options(workers));
    int64_t taken = 0;
    for (Batch& b : first.epoch(1)) {
      if (++taken == 20) break;
      (void)b;
    }
    LoaderState state = first.state();
    EXPECT_EQ(state.epoch, 1);
    EXPECT_EQ(state.position, 20 * 16);

    Loader second(dataset_, options(workers));
    second.restore(state);
    size_t k = 20;
    for (Batch& b : second.epoch(1)) {
      ASSERT_LT(k, all.size());
      EXPECT_TRUE(at::equal(b["image"], all[k++]));
    }
    EXPECT_EQ(k, all.size());
    EXPECT_EQ(second.state().epoch, 2);
    EXPECT_EQ(second.state().position, 0);
  }
}

TEST_F(LoaderTest, ElasticRestoreTwoToThreeRanksCoversTheRestExactlyOnce) {
  std::multiset<int64_t> seen;
  LoaderState state;
  for (int rank = 0; rank < 2; ++rank) {
    Loader loader(dataset_, options(2, rank, 2));
    for (int64_t l : labels(loader, 0, 10)) seen.insert(l);
    if (rank == 0) state = loader.state();
  }
  EXPECT_EQ(state.position, 10 * 16 * 2);
  for (int rank = 0; rank < 3; ++rank) {
    Loader loader(dataset_, options(1, rank, 3));
    loader.restore(state);
    for (int64_t l : labels(loader, 0)) seen.insert(l);
  }
  // Labels are i % 1000, so 0, 1 and 2 stand for two records each.
  for (int64_t l = 0; l < 1000; ++l) {
    const size_t expected = l < 3 ? 2 : 1;
    const size_t count = seen.count(l);
    // With padding, up to world_size - 1 samples repeat at the end of the epoch.
    EXPECT_GE(count, expected) << l;
    EXPECT_LE(count, expected + 1) << l;
  }
  EXPECT_LE(seen.size(), static_cast<size_t>(kRecords + 2));
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

TEST_F(LoaderTest, BadOptionsAreRejected) {
  LoaderOptions o = options(1);
  o.fields = {{"missing"}};
  EXPECT_THROW(Loader(dataset_, o), Error);
  o = options(1);
  o.prefetch = 0;
  EXPECT_THROW(Loader(dataset_, o), Error);
  o.prefetch = -2;
  EXPECT_THROW(Loader(dataset_, o), Error);
  o = options(1);
  o.rank = 2;
  EXPECT_THROW(Loader(dataset_, o), Error);
  Loader loader(dataset_, options(1));
  EXPECT_THROW(loader.restore({99, 0, 0}), Error);
}

TEST(AutoPrefetchTest, FillsSixteenMebibytesWithinFourToSixtyFourBatches) {
  EXPECT_EQ(auto_prefetch(64 * 3144), 64);     // Fashion-MNIST float32, batch 64: capped
  EXPECT_EQ(auto_prefetch(256 * 3144), 20);    // the same, batch 256
  EXPECT_EQ(auto_prefetch(2u << 20), 8);       // 2 MiB batches
  EXPECT_EQ(auto_prefetch(256u * 150528), 4);  // ImageNet-sized uint8, batch 256
  EXPECT_EQ(auto_prefetch(0), 64);
}

TEST_F(LoaderTest, AutoPrefetchIsResolvedFromTheBatchSize) {
  LoaderOptions o = options(1);
  o.prefetch = -1;
  Loader loader(dataset_, o);
  size_t sample_bytes = 0;
  for (const BatchField& f : loader.layout().fields()) sample_bytes += f.sample_bytes;
  EXPECT_EQ(loader.options().prefetch,
            auto_prefetch(sample_bytes * static_cast<size_t>(o.batch_size)));
}

}  // namespace
}  // namespace stoker
