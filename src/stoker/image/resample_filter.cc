#include "stoker/image/resample_filter.h"

#include <algorithm>
#include <cmath>

namespace stoker::image {
namespace {

// PIL's bilinear_filter: the triangle of support 1.
double triangle(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

// PIL's bicubic_filter: cubic convolution with a = -0.5, support 2, its operations in PIL's order
// so that the doubles are the same.
double cubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// The normalised double weights of output i of the axis `in_size` -> `out_size` seen through
// [in0, in1): calls `use(first, count, weights)` with the first source index, the taps' count and
// their weights. The same operations in the same order as PIL (and torch, whose weights are
// PIL's), so the doubles are the same.
template <typename Use>
void for_each_output(int in_size, double in0, double in1, int out_size, int out_begin, int out_end,
                     ResampleFilter filter, std::vector<double>& weights, Use use) {
  const bool bicubic = filter == ResampleFilter::kBicubic;
  const double scale = (in1 - in0) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = (bicubic ? 2.0 : 1.0) * filter_scale;
  const double inverse_filter_scale = 1.0 / filter_scale;
  weights.resize(static_cast<size_t>(std::ceil(support)) * 2 + 2);
  for (int i = out_begin; i < out_end; ++i) {
    const double center = in0 + (i + 0.5) * scale;
    // C's (int) truncation, as PIL: toward zero, also for the small negative values at the left
    // edge.
    const int first = std::max(static_cast<int>(center - support + 0.5), 0);
    const int end = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int count = end - first;
    double sum = 0.0;
    for (int t = 0; t < count; ++t) {
      const double x = (t + first - center + 0.5) * inverse_filter_scale;
      weights[t] = bicubic ? cubic(x) : triangle(x);
      sum += weights[t];
    }
    if (sum != 0.0)
      for (int t = 0; t < count; ++t) weights[t] /= sum;
    use(i, first, count, weights.data());
  }
}

}  // namespace

void compute_axis_taps(int in_size, double in0, double in1, int out_size, int out_begin,
                       int out_end, ResampleFilter filter, AxisTaps& taps, int precision) {
  thread_local std::vector<double> weights;
  const double support =
      (filter == ResampleFilter::kBicubic ? 2.0 : 1.0) * std::max((in1 - in0) / out_size, 1.0);
  taps.stride = static_cast<int>(std::ceil(support)) * 2 + 2;  // PIL's 2 ceil(support) + 1, even
  taps.precision = precision;
  const int outputs = out_end - out_begin;
  taps.first.resize(outputs);
  taps.count.resize(outputs);
  taps.weights.assign(static_cast<size_t>(outputs) * taps.stride, 0);
  for_each_output(in_size, in0, in1, out_size, out_begin, out_end, filter, weights,
                  [&](int i, int first, int count, const double* normalised) {
                    int32_t* out = &taps.weights[static_cast<size_t>(i - out_begin) * taps.stride];
                    for (int t = 0; t < count; ++t) {
                      const double fixed = normalised[t] * (1 << precision);
                      out[t] = static_cast<int32_t>(normalised[t] < 0 ? fixed - 0.5 : fixed + 0.5);
                    }
                    taps.first[i - out_begin] = first;
                    taps.count[i - out_begin] = count;
                  });
}

int torch_precision_bits(int in_size, int out_size, ResampleFilter filter) {
  thread_local std::vector<double> weights;
  // torch starts from the first output's first weight and counts the zeros past each output's
  // taps; a maximum below them is 0 either way.
  double largest = 0.0;
  for_each_output(in_size, 0.0, in_size, out_size, 0, out_size, filter, weights,
                  [&](int, int, int count, const double* w) {
                    for (int t = 0; t < count; ++t) largest = std::max(largest, w[t]);
                  });
  int bits = 0;
  while (bits < kPrecisionBits && static_cast<int>(0.5 + largest * (1 << (bits + 1))) < (1 << 15))
    ++bits;
  return bits;
}

}  // namespace stoker::image
