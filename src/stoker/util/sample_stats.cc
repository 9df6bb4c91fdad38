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
  const double all_outcomes = std::pow(2.0, static_cast<double>(n));
  double below = 0;  // P(Binomial(n, 1/2) < k)
  double ways = 1;   // n choose k
  size_t k = 0;
  while (k < n / 2 && below + ways / all_outcomes <= 0.025) {
    below += ways / all_outcomes;
    ways = ways * static_cast<double>(n - k) / static_cast<double>(k + 1);
    ++k;
  }
  k = std::max<size_t>(k, 1);
  return {values[k - 1], values[n - k]};
}

}  // namespace stoker
