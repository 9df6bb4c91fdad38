#include "stoker/store/import/image_folder_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace stoker {
namespace {

std::vector<uint64_t> identity(uint64_t count) {
  std::vector<uint64_t> out(count);
  std::iota(out.begin(), out.end(), uint64_t{0});
  return out;
}

TEST(ImageFolderOrder, FolderIsImageFoldersOwnOrder) {
  EXPECT_EQ(image_folder_order(RecordOrder::kFolder, 7, 0, 1000), identity(1000));
  EXPECT_TRUE(image_folder_order(RecordOrder::kShuffled, 7, 0, 0).empty());
  EXPECT_EQ(image_folder_order(RecordOrder::kShuffled, 7, 0, 1), identity(1));
}

TEST(ImageFolderOrder, ShuffledIsASeededPermutationPerSplit) {
  const std::vector<uint64_t> order = image_folder_order(RecordOrder::kShuffled, 7, 0, 1000);
  std::vector<uint64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity(1000));
  EXPECT_NE(order, identity(1000));
  EXPECT_EQ(order, image_folder_order(RecordOrder::kShuffled, 7, 0, 1000)) << "a pure function";
  EXPECT_NE(order, image_folder_order(RecordOrder::kShuffled, 8, 0, 1000));
  EXPECT_NE(order, image_folder_order(RecordOrder::kShuffled, 7, 1, 1000));
  // Pinned: the order is part of the format (docs/FORMAT.md), the same on every machine.
  EXPECT_EQ(image_folder_order(RecordOrder::kShuffled, 7, 0, 8),
            (std::vector<uint64_t>{6, 3, 5, 7, 0, 4, 1, 2}));
}

// Samples that come class by class (10 classes of 100) are spread so that every block of 100
// records (a shard) holds most classes.
TEST(ImageFolderOrder, ShuffledMixesClassesInEveryBlock) {
  const std::vector<uint64_t> order = image_folder_order(RecordOrder::kShuffled, 1, 0, 1000);
  for (size_t block = 0; block < 10; ++block) {
    std::vector<bool> seen(10, false);
    for (size_t i = 100 * block; i < 100 * (block + 1); ++i) seen[order[i] / 100] = true;
    EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 10) << "block " << block;
  }
}

}  // namespace
}  // namespace stoker
