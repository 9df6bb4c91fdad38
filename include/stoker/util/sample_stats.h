#pragma once
// Summaries of repeated measurements on a noisy machine: the median and a confidence interval
// for it that assumes nothing about the distribution of the noise.

#include <utility>
#include <vector>

namespace stoker {

// The median of `values` (the mean of the middle two for an even count). Needs a value.
double median(std::vector<double> values);

// A distribution-free 95% confidence interval of the median: the k-th smallest and the k-th
// largest of `values`, with k the largest rank such that P(Binomial(n, 1/2) < k) <= 2.5%.
// Below 6 values no such k exists and the interval is the whole range. Needs a value.
std::pair<double, double> median_interval_95(std::vector<double> values);

}  // namespace stoker
