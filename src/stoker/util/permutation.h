#pragma once
// The shuffle every order makes (include/stoker/pipeline/sampler.h defines it): [0, n) permuted
// by Fisher-Yates driven by CounterRng(seed, stream),
//     for i = n-1 down to 1: j = rng.uniform_below(i + 1); swap(p[i], p[j])
// Pure functions; thread-safe. Both poll the thread's cancellation (cancel_scope.h): a cancel
// ends them with Error (kCancelled).

#include <cstdint>
#include <utility>
#include <vector>

#include "stoker/util/cancel_scope.h"
#include "stoker/util/rng.h"

namespace stoker {

// [0, n) in order: the unshuffled form.
inline std::vector<int64_t> identity_order(int64_t n) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    poll_cancellation(i);
    p[i] = i;
  }
  return p;
}

inline std::vector<int64_t> fisher_yates(int64_t n, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> p = identity_order(n);
  CounterRng rng(seed, stream);
  for (int64_t i = n - 1; i >= 1; --i) {
    poll_cancellation(i);
    const auto j = static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(i) + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}

}  // namespace stoker
