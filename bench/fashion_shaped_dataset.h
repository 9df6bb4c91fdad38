#pragma once
// The dataset the micro-benchmarks read: 60000 random records shaped like Fashion-MNIST
// (image uint8[1,28,28] + label int64) in a temporary directory, plus one shuffled order of
// them. Built once per process on first use.
#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "stoker/store/dataset.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::bench {

inline constexpr int64_t kRecords = 60000;

struct FashionShapedDataset {
  testing::TempDir dir;
  std::shared_ptr<const Dataset> dataset;
  std::vector<int64_t> order;

  FashionShapedDataset() {
    Schema schema =
        Schema::create({{"image", DType::kUint8, {1, 28, 28}}, {"label", DType::kInt64, {}}})
            .value_or_throw();
    std::mt19937_64 rng(1);
    std::vector<std::vector<uint8_t>> records;
    for (int64_t i = 0; i < kRecords; ++i) records.push_back(testing::random_record(schema, rng));
    testing::write_dataset(dir / "ds", schema, records);
    dataset = Dataset::open(dir / "ds").value_or_throw();
    order.resize(kRecords);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
  }
};

inline FashionShapedDataset& fashion_shaped_dataset() {
  static FashionShapedDataset f;
  return f;
}

}  // namespace stoker::bench
