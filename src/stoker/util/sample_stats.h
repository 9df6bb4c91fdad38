#pragma once
// Summaries of repeated measurements on a noisy machine: the median and a confidence interval
// for it that assumes nothing about the distribution of the noise.

#include <cstddef>
#include <utility>
#include <vector>

namespace stoker {

// The median of `values` (the mean of the middle two for an even count). Needs a value.
double median(std::vector<double> values);

// A distribution-free 95% confidence interval of the median: the k-th smallest and the k-th
// largest of `values`, with k the largest rank such that P(Binomial(n, 1/2) < k) <= 2.5%.
// Below 6 values no such k exists and the interval is the whole range. Needs a value.
std::pair<double, double> median_interval_95(std::vector<double> values);

// The probability that median_interval_95 of `n` values holds the true median (for values
// from a continuous distribution): at least 0.95 from n = 6 up, less below (0.9375 at 5).
double median_interval_coverage(size_t n);

}  // namespace stoker
