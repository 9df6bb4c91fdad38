#include "stoker/util/range_of.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace stoker {
namespace {

// What RangeOf answers for each value from 0 past the end: the binary search's answer.
void expect_search(const std::vector<int64_t>& starts) {
  const RangeOf<int64_t> range_of(starts);
  for (int64_t value = 0; value <= starts.back() + 3; ++value) {
    const size_t searched = static_cast<size_t>(
        std::upper_bound(starts.begin() + 1, starts.end(), value) - starts.begin() - 1);
    ASSERT_EQ(range_of(value), searched) << "value " << value;
  }
}

TEST(RangeOfTest, RangesOfOneSizeAndAShorterLast) {
  expect_search({0, 4, 8, 12, 14});
  expect_search({0, 4, 8, 12, 16});
  expect_search({0, 5});
}

TEST(RangeOfTest, RangesOfSizesThatDiffer) {
  expect_search({0, 3, 4, 9, 10});
  expect_search({0, 4, 8, 12, 17});  // the last longer than the others
  expect_search({0, 4, 4, 8});       // an empty range
  expect_search({0, 4, 8, 8});       // an empty last range
  expect_search({0, 0, 4});          // an empty first range
  expect_search({0});                // no range at all
}

TEST(RangeOfTest, KeepsItsStarts) {
  const std::vector<uint64_t> starts{0, 7, 14};
  EXPECT_EQ(RangeOf<uint64_t>(starts).starts(), starts);
  EXPECT_EQ(RangeOf<uint64_t>(starts)(13), 1u);
}

}  // namespace
}  // namespace stoker
