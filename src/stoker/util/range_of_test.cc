#include "stoker/util/range_of.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace stoker {
namespace {

// What RangeOf answers for each value from before the first start past the end: the binary
// search's answer.
void expect_search(const std::vector<int64_t>& starts) {
  const RangeOf<int64_t> range_of(starts);
  for (int64_t value = starts.front() - 2; value <= starts.back() + 3; ++value) {
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

TEST(RangeOfTest, RangesThatStartPastZero) {
  expect_search({5, 9, 13});
  expect_search({5, 6, 20, 21});
}

// Ranges of random sizes, some empty, some long, and many (a mixture's files of units): every
// value's range is the binary search's, whatever the buckets' size.
TEST(RangeOfTest, ManyRangesOfRandomSizesAreTheSearchs) {
  uint64_t state = 7;
  const auto next = [&state](int64_t below) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(below));
  };
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<int64_t> starts{next(3)};
    const int64_t ranges = 1 + next(300);
    for (int64_t r = 0; r < ranges; ++r) {
      const int64_t kind = next(10);
      starts.push_back(starts.back() + (kind == 0 ? 0 : kind == 1 ? 1 + next(2000) : 1 + next(40)));
    }
    expect_search(starts);
  }
}

TEST(RangeOfTest, KeepsItsStarts) {
  const std::vector<uint64_t> starts{0, 7, 14};
  EXPECT_EQ(RangeOf<uint64_t>(starts).starts(), starts);
  EXPECT_EQ(RangeOf<uint64_t>(starts)(13), 1u);
}

}  // namespace
}  // namespace stoker
