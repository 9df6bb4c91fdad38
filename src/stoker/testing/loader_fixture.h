#pragma once
// The fixture the loader suites share (LoaderCore's and the LibTorch Loader's): a dataset of
// kRecords labelled records (label == index % 1000, so labels 0-2 stand for two records each)
// in 4 KiB shards, and small-batch loader options.

#include <gtest/gtest.h>

#include <memory>

#include "stoker/pipeline/loader_core.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::testing {

class LoaderFixture : public ::testing::Test {
 protected:
  static constexpr int64_t kRecords = 1003;

  void SetUp() override {
    write_labelled_dataset(dir_ / "ds", kRecords, 1000, 4096);
    dataset_ = Dataset::open(dir_ / "ds").value_or_throw();
  }
  // Batches of 16, prefetch 3, seed 5, the image normalised and the label.
  static LoaderOptions options(WorkerCount workers, int rank = 0, int world = 1) {
    LoaderOptions o;
    o.batch_size = 16;
    o.workers = workers;
    o.prefetch = 3;
    o.seed = 5;
    o.rank = rank;
    o.world_size = world;
    o.fields = {{"image", true, {0.5f}, {0.5f}}, {"label"}};
    return o;
  }

  TempDir dir_;
  std::shared_ptr<const Dataset> dataset_;
};

}  // namespace stoker::testing
