#pragma once
// RangeOf: which of n consecutive ranges, given by their sorted starts (n + 1 values: each
// range's first value, then the end), holds a value: the last range whose start is at most it,
// as std::upper_bound over the starts after the first finds it (n for a value at or past the
// end). A binary search's branches mispredict on random values, about 20 ns a lookup, which a
// shuffled loader pays several times a sample; so where every range but the last has one size
// and the last no more (a token file's units), a division finds it, and elsewhere (a mixture's
// files, each of such units) a table of the range holding the first value of each of about 4 n
// equal buckets, from which a value's range is a step or two ahead. Immutable: thread-safe.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace stoker {

template <typename T>
class RangeOf {
 public:
  RangeOf() = default;
  // `starts`: n + 1 sorted values, n >= 0.
  explicit RangeOf(std::vector<T> starts) : starts_(std::move(starts)) {
    const size_t n = starts_.size() - 1;
    const T size = n > 0 ? starts_[1] - starts_[0] : T{0};
    bool uniform = size > 0 && starts_[0] == 0 && starts_[n] - starts_[n - 1] <= size;
    for (size_t s = 1; uniform && s < n; ++s) uniform = starts_[s] == starts_[s - 1] + size;
    size_ = uniform ? size : T{0};
    if (!uniform && n > 0 && starts_[n] > starts_[0]) bucket(n);
  }

  size_t operator()(T value) const {
    if (size_ > 0)
      return value < starts_.back() ? static_cast<size_t>(value / size_) : starts_.size() - 1;
    if (!first_.empty() && value >= starts_.front() && value < starts_.back()) {
      size_t r = first_[static_cast<uint64_t>(value - starts_.front()) >> shift_];
      while (starts_[r + 1] <= value) ++r;
      return r;
    }
    return static_cast<size_t>(std::upper_bound(starts_.begin() + 1, starts_.end(), value) -
                               starts_.begin()) -
           1;
  }

  const std::vector<T>& starts() const { return starts_; }

 private:
  // Fills first_: buckets of 2^shift_ values from the first start, at most 4 n + 64 of them.
  void bucket(size_t n) {
    const auto span = static_cast<uint64_t>(starts_[n] - starts_[0]);
    while ((span >> shift_) > 4 * n + 64) ++shift_;
    first_.resize(static_cast<size_t>(span >> shift_) + 1);
    size_t r = 0;
    for (size_t b = 0; b < first_.size(); ++b) {
      const uint64_t low = static_cast<uint64_t>(b) << shift_;  // its first value, from starts_[0]
      while (r + 1 < n && static_cast<uint64_t>(starts_[r + 1] - starts_[0]) <= low) ++r;
      first_[b] = r;
    }
  }

  std::vector<T> starts_;
  T size_ = 0;  // the ranges' one size, 0 where they differ (or the starts do not begin at 0)
  // Where they differ: the range holding each bucket's first value (empty: none, or no range).
  std::vector<size_t> first_;
  unsigned shift_ = 0;
};

}  // namespace stoker
