#pragma once
// Standard normal values from an operation's stream, Box-Muller of two uniform draws u and v
// (next_double() in that order), r = sqrt(-2 ln(1 - u)), angle 2 pi v:
//   standard_normal   one value, r cos(angle)
//   standard_normals  n values into `out`, two a pair: r cos(angle) then r sin(angle) (an odd
//                     n's last the cos alone), half the draws and logarithms of n single ones
// Shared by the operations whose reference draws normal values (random_erasing's "random"
// fill and timm_random_erasing's, timm's magnitude noise).

#include <math.h>

#include <cmath>
#include <cstddef>

#include "stoker/util/rng.h"

namespace stoker::ops {

namespace normal_draw_detail {
constexpr double kTwoPi = 6.283185307179586;
inline double radius(CounterRng& rng) {
  return std::sqrt(-2.0 * std::log(1.0 - rng.next_double()));
}
}  // namespace normal_draw_detail

inline double standard_normal(CounterRng& rng) {
  const double r = normal_draw_detail::radius(rng);
  return r * std::cos(normal_draw_detail::kTwoPi * rng.next_double());
}

inline void standard_normals(CounterRng& rng, float* out, size_t n) {
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    const double r = normal_draw_detail::radius(rng);
    double sin = 0.0, cos = 0.0;
    ::sincos(normal_draw_detail::kTwoPi * rng.next_double(), &sin, &cos);
    out[i] = static_cast<float>(r * cos);
    out[i + 1] = static_cast<float>(r * sin);
  }
  if (i < n) out[i] = static_cast<float>(standard_normal(rng));
}

}  // namespace stoker::ops
