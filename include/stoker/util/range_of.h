#pragma once
// RangeOf: which of n consecutive ranges, given by their sorted starts (n + 1 values: each
// range's first value, then the end), holds a value: the last range whose start is at most it,
// as std::upper_bound over the starts after the first finds it (n for a value at or past the
// end). Where every range but the last has one size and the last no more (a token file's units),
// a division finds it: a binary search's branches mispredict on random values, about 20 ns a
// lookup, which a shuffled loader pays several times a sample. Immutable: thread-safe.

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
  }

  size_t operator()(T value) const {
    if (size_ > 0)
      return value < starts_.back() ? static_cast<size_t>(value / size_) : starts_.size() - 1;
    return static_cast<size_t>(std::upper_bound(starts_.begin() + 1, starts_.end(), value) -
                               starts_.begin()) -
           1;
  }

  const std::vector<T>& starts() const { return starts_; }

 private:
  std::vector<T> starts_;
  T size_ = 0;  // the ranges' one size, 0 where they differ (or the starts do not begin at 0)
};

}  // namespace stoker
