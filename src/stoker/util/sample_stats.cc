#include "stoker/util/sample_stats.h"

#include <algorithm>
#include <cmath>

namespace stoker {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

namespace {

// P(Binomial(n, 1/2) = k), in log space so that no power of 2 overflows.
double half_binomial_pmf(size_t n, size_t k) {
  const double nd = static_cast<double>(n), kd = static_cast<double>(k);
  return std::exp(std::lgamma(nd + 1) - std::lgamma(kd + 1) - std::lgamma(nd - kd + 1) -
                  nd * std::log(2.0));
}

// The interval's rank k (1-based, at least 1) and P(Binomial(n, 1/2) < k): the interval misses
// the median when fewer than k values, or more than n - k, lie below it.
std::pair<size_t, double> interval_rank(size_t n) {
  double below = 0;
  size_t k = 0;
  while (k < n / 2 && below + half_binomial_pmf(n, k) <= 0.025) below += half_binomial_pmf(n, k++);
  if (k == 0) return {1, half_binomial_pmf(n, 0)};
  return {k, below};
}

}  // namespace

std::pair<double, double> median_interval_95(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t k = interval_rank(values.size()).first;
  return {values[k - 1], values[values.size() - k]};
}

double median_interval_coverage(size_t n) {
  if (n == 0) return 0;
  return 1 - 2 * interval_rank(n).second;
}

}  // namespace stoker
