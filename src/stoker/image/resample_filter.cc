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

}  // namespace

void compute_axis_taps(int in_size, double in0, double in1, int out_size, int out_begin,
                       int out_end, ResampleFilter filter, AxisTaps& taps) {
  const bool bicubic = filter == ResampleFilter::kBicubic;
  // The same operations in the same order as PIL, so the double weights round to the same
  // fixed-point values.
  const double scale = (in1 - in0) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = (bicubic ? 2.0 : 1.0) * filter_scale;
  const double inverse_filter_scale = 1.0 / filter_scale;
  taps.stride = static_cast<int>(std::ceil(support)) * 2 + 2;  // PIL's 2 ceil(support) + 1, even
  const int outputs = out_end - out_begin;
  taps.first.resize(outputs);
  taps.count.resize(outputs);
  taps.weights.assign(static_cast<size_t>(outputs) * taps.stride, 0);
  for (int i = out_begin; i < out_end; ++i) {
    const double center = in0 + (i + 0.5) * scale;
    // C's (int) truncation, as PIL: toward zero, also for the small negative values at the left
    // edge.
    const int first = std::max(static_cast<int>(center - support + 0.5), 0);
    const int end = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int count = end - first;
    // Each weight is computed twice, for the sum and then normalised: the same double both times.
    const auto weight = [&](int t) {
      const double x = (t + first - center + 0.5) * inverse_filter_scale;
      return bicubic ? cubic(x) : triangle(x);
    };
    double sum = 0.0;
    for (int t = 0; t < count; ++t) sum += weight(t);
    int32_t* out = &taps.weights[static_cast<size_t>(i - out_begin) * taps.stride];
    for (int t = 0; t < count; ++t) {
      const double normalised = sum != 0.0 ? weight(t) / sum : weight(t);
      const double fixed = normalised * (1 << kPrecisionBits);
      out[t] = static_cast<int32_t>(normalised < 0 ? fixed - 0.5 : fixed + 0.5);
    }
    taps.first[i - out_begin] = first;
    taps.count[i - out_begin] = count;
  }
}

}  // namespace stoker::image
