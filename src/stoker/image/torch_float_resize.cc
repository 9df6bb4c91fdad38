#include "stoker/image/torch_float_resize.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace stoker::image {
namespace {

// torch's antialias filters in float: the triangle, and the cubic with a = -0.5 whose
// polynomials its AVX2/AVX-512 build fuses into multiply-adds.
float triangle(float x) {
  x = std::fabs(x);
  return x < 1.0f ? static_cast<float>(1.0 - x) : 0.0f;
}

float cubic(float x) {
  constexpr float a = -0.5f;
  x = std::fabs(x);
  if (x < 1.0f) return std::fmaf(std::fmaf(a + 2.0f, x, -(a + 3.0f)) * x, x, 1.0f);
  if (x < 2.0f)
    return std::fmaf(std::fmaf(std::fmaf(a, x, -(5.0f * a)), x, 8.0f * a), x, -(4.0f * a));
  return 0.0f;
}

// One axis: output i reads `count[i]` source indices from first[i], weights[i * stride + t].
struct FloatTaps {
  int stride = 0;
  std::vector<int> first, count;
  std::vector<float> weights;
};

// The taps of outputs [begin, end) of an axis of in_size -> out_size (ATen's
// _compute_weights_aa in float, its operations in its order and precisions).
void compute_taps(int in_size, int out_size, int begin, int end, ResampleFilter filter,
                  FloatTaps& taps) {
  const bool bicubic = filter == ResampleFilter::kBicubic;
  const double half_width = bicubic ? 2.0 : 1.0;  // interp_size * 0.5
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  const float support =
      scale >= 1.0f ? static_cast<float>(half_width * scale) : static_cast<float>(half_width);
  const float inverse = scale >= 1.0f ? static_cast<float>(1.0 / scale) : 1.0f;
  taps.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.assign(end - begin, 0);
  taps.count.assign(end - begin, 0);
  taps.weights.assign(static_cast<size_t>(end - begin) * taps.stride, 0.0f);
  for (int i = begin; i < end; ++i) {
    const float center = static_cast<float>(scale * (i + 0.5));
    const int first = std::max(static_cast<int>((center - support) + 0.5), 0);
    const int count = std::min(static_cast<int>((center + support) + 0.5), in_size) - first;
    float* w = &taps.weights[static_cast<size_t>(i - begin) * taps.stride];
    float total = 0.0f;
    for (int t = 0; t < count; ++t) {
      const float x = static_cast<float>((static_cast<float>(t + first) - center + 0.5) *
                                         static_cast<double>(inverse));
      w[t] = bicubic ? cubic(x) : triangle(x);
      total += w[t];
    }
    if (total != 0.0f)
      for (int t = 0; t < count; ++t) w[t] /= total;
    taps.first[i - begin] = first;
    taps.count[i - begin] = count;
  }
}

// The taps' sum of values at p, p + step, ...: the first `plain` as rounded products added in
// order, the rest fused (torch's wheels, see the header).
float tap_sum(const float* p, size_t step, const float* w, int n, TorchFloatSums sums) {
  const int plain = sums == TorchFloatSums::kUnrolled ? 1 + 4 * ((n - 1) / 4) : 1;
  float sum = p[0] * w[0];
  for (int t = 1; t < n; ++t) {
    const float value = p[t * step];
    if (t < plain) {
      const float product = value * w[t];
      sum = sum + product;
    } else {
      sum = std::fmaf(value, w[t], sum);
    }
  }
  return sum;
}

}  // namespace

Status torch_float_resize(const RgbView& src, int src_x, int src_y, int in_width, int in_height,
                          int out_width, int out_height, const ResampleWindow& window,
                          ResampleFilter filter, std::vector<float>& out, TorchFloatSums sums) {
  if (in_width < 1 || in_height < 1 || out_width < 1 || out_height < 1 ||
      out_width > kMaxResampleOutputSide || out_height > kMaxResampleOutputSide)
    return invalid_argument("torch resize of " + std::to_string(in_width) + "x" +
                            std::to_string(in_height) + " to " + std::to_string(out_width) + "x" +
                            std::to_string(out_height) + ": sizes out of range");
  const ResampleWindow w = window.width != 0 ? window : ResampleWindow{0, 0, out_width, out_height};
  if (w.x < 0 || w.y < 0 || w.width < 1 || w.height < 1 || w.width > out_width - w.x ||
      w.height > out_height - w.y)
    return invalid_argument("torch resize window outside the " + std::to_string(out_width) + "x" +
                            std::to_string(out_height) + " output");
  // Each axis: the taps, or none where it keeps its size (torch resamples it not at all).
  const bool horizontal = in_width != out_width, vertical = in_height != out_height;
  FloatTaps h, v;
  if (horizontal) compute_taps(in_width, out_width, w.x, w.x + w.width, filter, h);
  if (vertical) compute_taps(in_height, out_height, w.y, w.y + w.height, filter, v);
  const int col_begin = horizontal ? h.first.front() : w.x;
  const int col_end = horizontal ? h.first.back() + h.count.back() : w.x + w.width;
  const int row_begin = vertical ? v.first.front() : w.y;
  const int row_end = vertical ? v.first.back() + v.count.back() : w.y + w.height;
  if (src.data == nullptr || col_begin < src_x || row_begin < src_y ||
      col_end > src_x + src.width || row_end > src_y + src.height)
    return invalid_argument("torch resize source does not cover the pixels the window reads");

  // The horizontal pass over the rows the vertical one reads: [row, column, channel] floats.
  const size_t columns = static_cast<size_t>(w.width);
  std::vector<float> rows(static_cast<size_t>(row_end - row_begin) * columns * 3);
  std::vector<float> line;
  for (int y = row_begin; y < row_end; ++y) {
    const uint8_t* in = src.row(y - src_y);
    float* to = &rows[static_cast<size_t>(y - row_begin) * columns * 3];
    if (!horizontal) {
      for (size_t k = 0; k < columns * 3; ++k) to[k] = in[(w.x - src_x) * 3 + k];
      continue;
    }
    line.assign(static_cast<size_t>(col_end - col_begin) * 3, 0.0f);
    for (size_t k = 0; k < line.size(); ++k) line[k] = in[(col_begin - src_x) * 3 + k];
    for (size_t x = 0; x < columns; ++x) {
      const float* from = &line[static_cast<size_t>(h.first[x] - col_begin) * 3];
      for (int c = 0; c < 3; ++c)
        to[x * 3 + c] = tap_sum(from + c, 3, &h.weights[x * h.stride], h.count[x], sums);
    }
  }
  // The vertical pass.
  out.resize(static_cast<size_t>(w.height) * columns * 3);
  for (int y = 0; y < w.height; ++y) {
    float* to = &out[static_cast<size_t>(y) * columns * 3];
    if (!vertical) {
      std::copy_n(&rows[static_cast<size_t>(y) * columns * 3], columns * 3, to);
      continue;
    }
    const float* from = &rows[static_cast<size_t>(v.first[y] - row_begin) * columns * 3];
    const float* weights = &v.weights[static_cast<size_t>(y) * v.stride];
    for (size_t k = 0; k < columns * 3; ++k)
      to[k] = tap_sum(from + k, columns * 3, weights, v.count[y], sums);
  }
  return Status::ok();
}

void round_to_uint8(const std::vector<float>& values, ResampleFilter filter,
                    std::vector<uint8_t>& out) {
  out.resize(values.size());
  const bool bicubic = filter == ResampleFilter::kBicubic;
  for (size_t k = 0; k < values.size(); ++k) {
    const float value = bicubic ? std::min(std::max(values[k], 0.0f), 255.0f) : values[k];
    const float rounded = std::nearbyint(value);  // half to even, as torch.round
    out[k] = static_cast<uint8_t>(std::min(std::max(rounded, 0.0f), 255.0f));
  }
}

}  // namespace stoker::image
