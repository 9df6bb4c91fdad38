#include "stoker/util/sample_stats.h"

#include <algorithm>
#include <cmath>

namespace stoker {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::pair<double, double> median_interval_95(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double nd = static_cast<double>(n);
  // P(Binomial(n, 1/2) = k), in log space so that no power of 2 overflows.
  auto p_equal = [nd](size_t k) {
    const double kd = static_cast<double>(k);
    return std::exp(std::lgamma(nd + 1) - std::lgamma(kd + 1) - std::lgamma(nd - kd + 1) -
                    nd * std::log(2.0));
  };
  double below = 0;  // P(Binomial(n, 1/2) < k)
  size_t k = 0;
  while (k < n / 2 && below + p_equal(k) <= 0.025) below += p_equal(k++);
  k = std::max<size_t>(k, 1);
  return {values[k - 1], values[n - k]};
}

double median_interval_coverage(size_t n) {
  if (n == 0) return 0;
  std::vector<double> ranks(n);
  for (size_t i = 0; i < n; ++i) ranks[i] = static_cast<double>(i);
  const size_t k = static_cast<size_t>(median_interval_95(ranks).first) + 1;
  // The interval misses the median when fewer than k, or more than n - k, values lie below it.
  const double nd = static_cast<double>(n);
  double miss = 0;
  for (size_t j = 0; j < k; ++j) {
    const double jd = static_cast<double>(j);
    miss += std::exp(std::lgamma(nd + 1) - std::lgamma(jd + 1) - std::lgamma(nd - jd + 1) -
                     nd * std::log(2.0));
  }
  return 1 - 2 * miss;
}

}  // namespace stoker
