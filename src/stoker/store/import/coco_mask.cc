#include "stoker/store/import/coco_mask.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace stoker {
namespace {

// pycocotools' polygons are traced on a grid this many times finer than the pixels.
constexpr double kTraceScale = 5;
// Most boundary points a polygon's trace may make (16 M: 128 MB of points).
constexpr int64_t kMaxTracePoints = int64_t{1} << 24;

// C's (int)x as x86-64 computes it, which pycocotools' arithmetic relies on: truncation toward
// zero, and INT_MIN (the "integer indefinite") for NaN or a value beyond int, as its zero-length
// edges give (0 / 0).
int32_t c_int(double x) {
  if (!(x > -2147483649.0 && x < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(x);
}

Status check_size(int64_t height, int64_t width) {
  if (height < 1 || width < 1 || height > kMaxMaskPixels / width ||
      height * width >= kMaxMaskPixels)
    return invalid_argument(fmt::format("mask size {}x{} is not at least 1x1 and under {} pixels",
                                        height, width, kMaxMaskPixels));
  return Status::ok();
}

// The counts' sum is the image's pixels: more would paint past it, fewer leave pixels unset.
Status check_cover(const RunLengthMask& mask) {
  uint64_t sum = 0;
  for (const uint32_t count : mask.counts) sum += count;
  const auto pixels = static_cast<uint64_t>(mask.height * mask.width);
  if (sum != pixels)
    return invalid_argument(fmt::format("run-length counts sum to {}, not {}x{} = {} pixels", sum,
                                        mask.height, mask.width, pixels));
  return Status::ok();
}

// The boundary of the polygon (points already on the 5× grid, closed) traced point by point
// along each edge's longer axis, as rleFrPoly does.
Status trace_boundary(const std::vector<int32_t>& x, const std::vector<int32_t>& y,
                      std::vector<int32_t>& u, std::vector<int32_t>& v) {
  int64_t points = 0;
  for (size_t j = 0; j + 1 < x.size(); ++j)
    points += std::max(std::abs(int64_t{x[j]} - x[j + 1]), std::abs(int64_t{y[j]} - y[j + 1])) + 1;
  if (points > kMaxTracePoints)
    return invalid_argument(fmt::format(
        "polygon's boundary is too long ({} points traced, at most {})", points, kMaxTracePoints));
  u.reserve(points);
  v.reserve(points);
  for (size_t j = 0; j + 1 < x.size(); ++j) {
    int32_t xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
    const int32_t dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool along_x = dx >= dy;
    const bool flip = along_x ? xs > xe : ys > ye;
    if (flip) {
      std::swap(xs, xe);
      std::swap(ys, ye);
    }
    const double slope =
        along_x ? static_cast<double>(ye - ys) / dx : static_cast<double>(xe - xs) / dy;
    const int32_t steps = along_x ? dx : dy;
    for (int32_t d = 0; d <= steps; ++d) {
      const int32_t t = flip ? steps - d : d;
      if (along_x) {
        u.push_back(t + xs);
        v.push_back(c_int(ys + slope * t + .5));
      } else {
        v.push_back(t + ys);
        u.push_back(c_int(xs + slope * t + .5));
      }
    }
  }
  return Status::ok();
}

}  // namespace

Result<RunLengthMask> mask_from_polygon(const std::vector<double>& xy, int64_t height,
                                        int64_t width) {
  STOKER_RETURN_IF_ERROR(check_size(height, width));
  if (xy.size() % 2 != 0 || xy.size() < 6)
    return invalid_argument(
        fmt::format("a polygon is at least 3 points, x and y each, not {} coordinates", xy.size()));
  for (const double c : xy)
    if (!(std::abs(c) <= kMaxPolygonCoordinate))
      return invalid_argument(fmt::format("polygon coordinate {} is not a number within ±{}", c,
                                          kMaxPolygonCoordinate));
  // The points on the 5× grid, the first repeated to close the polygon.
  const size_t k = xy.size() / 2;
  std::vector<int32_t> x(k + 1), y(k + 1);
  for (size_t j = 0; j < k; ++j) {
    x[j] = c_int(kTraceScale * xy[2 * j] + .5);
    y[j] = c_int(kTraceScale * xy[2 * j + 1] + .5);
  }
  x[k] = x[0];
  y[k] = y[0];
  std::vector<int32_t> u, v;
  STOKER_RETURN_IF_ERROR(trace_boundary(x, y, u, v));

  // Where the trace crosses a column of pixel centres, the first pixel of that column inside
  // (rounded up), as a column-major position; then the image's end.
  std::vector<uint32_t> starts;
  for (size_t j = 1; j < u.size(); ++j) {
    if (u[j] == u[j - 1]) continue;
    double xd = u[j] < u[j - 1] ? u[j] : u[j] - 1;
    xd = (xd + .5) / kTraceScale - .5;
    if (std::floor(xd) != xd || xd < 0 || xd > static_cast<double>(width - 1)) continue;
    double yd = std::min(v[j], v[j - 1]);
    yd = (yd + .5) / kTraceScale - .5;
    yd = std::ceil(std::clamp(yd, 0.0, static_cast<double>(height)));
    starts.push_back(
        static_cast<uint32_t>(static_cast<int64_t>(xd) * height + static_cast<int64_t>(yd)));
  }
  starts.push_back(static_cast<uint32_t>(height * width));
  std::sort(starts.begin(), starts.end());
  // Positions to runs; an empty run joins its two neighbours into one.
  uint32_t previous = 0;
  for (uint32_t& s : starts) {
    const uint32_t at = s;
    s = at - previous;
    previous = at;
  }
  RunLengthMask mask{height, width, {starts[0]}};
  for (size_t j = 1; j < starts.size(); ++j) {
    if (starts[j] > 0) {
      mask.counts.push_back(starts[j]);
    } else if (++j < starts.size()) {
      mask.counts.back() += starts[j];
    }
  }
  return mask;
}

Result<RunLengthMask> mask_from_counts(const std::vector<int64_t>& counts, int64_t height,
                                       int64_t width) {
  STOKER_RETURN_IF_ERROR(check_size(height, width));
  RunLengthMask mask{height, width, {}};
  mask.counts.reserve(counts.size());
  for (const int64_t count : counts) {
    if (count < 0 || count > std::numeric_limits<uint32_t>::max())
      return invalid_argument(fmt::format("run-length count {} is not in [0, 2^32)", count));
    mask.counts.push_back(static_cast<uint32_t>(count));
  }
  STOKER_RETURN_IF_ERROR(check_cover(mask));
  return mask;
}

Result<RunLengthMask> mask_from_string(std::string_view text, int64_t height, int64_t width) {
  STOKER_RETURN_IF_ERROR(check_size(height, width));
  // Each count: 5 bits a character, least significant first, '0' + bits, 0x20 set while more
  // follow, 0x10 of the last the sign; from the third count on, a difference from the count two
  // before. Seven characters (35 bits) hold any uint32.
  constexpr int kMaxCharacters = 7;
  RunLengthMask mask{height, width, {}};
  size_t p = 0;
  while (p < text.size()) {
    int64_t value = 0;
    int k = 0;
    bool more = true;
    while (more) {
      if (p == text.size()) return invalid_argument("run-length string ends inside a count");
      const int c = static_cast<unsigned char>(text[p]) - 48;
      if (c < 0 || c > 63)
        return invalid_argument(
            fmt::format("run-length string has byte {:#04x} at {}, not one of "
                        "'0' to 'o'",
                        static_cast<unsigned char>(text[p]), p));
      if (k == kMaxCharacters)
        return invalid_argument(
            fmt::format("run-length string has a count of more than {} "
                        "characters at {}",
                        kMaxCharacters, p));
      value |= int64_t{c & 0x1f} << (5 * k);
      more = (c & 0x20) != 0;
      ++p;
      ++k;
      if (!more && (c & 0x10)) value -= int64_t{1} << (5 * k);
    }
    const size_t i = mask.counts.size();
    if (i > 2) value += mask.counts[i - 2];
    if (value < 0 || value > std::numeric_limits<uint32_t>::max())
      return invalid_argument(
          fmt::format("run-length string's count {} is {}, not in [0, 2^32)", i, value));
    mask.counts.push_back(static_cast<uint32_t>(value));
  }
  STOKER_RETURN_IF_ERROR(check_cover(mask));
  return mask;
}

void paint_mask(const RunLengthMask& mask, uint8_t* pixels) {
  const int64_t h = mask.height, w = mask.width;
  int64_t position = 0;  // column-major
  for (size_t j = 0; j < mask.counts.size(); ++j) {
    const int64_t end = position + mask.counts[j];
    if (j % 2 == 1) {
      for (int64_t at = position; at < end; ++at) pixels[(at % h) * w + at / h] = 1;
    }
    position = end;
  }
}

}  // namespace stoker
