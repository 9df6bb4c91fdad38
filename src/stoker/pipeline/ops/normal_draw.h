#pragma once
// A standard normal value from an operation's stream: Box-Muller of two uniform draws,
// sqrt(-2 ln(1 - u)) cos(2 pi v), u and v next_double() in that order. Shared by the operations
// whose reference draws normal values (random_erasing's "random" fill, timm's magnitude noise).

#include <cmath>

#include "stoker/util/rng.h"

namespace stoker::ops {

inline double standard_normal(CounterRng& rng) {
  const double u = 1.0 - rng.next_double();  // (0, 1]
  const double v = rng.next_double();
  constexpr double kTwoPi = 6.283185307179586;
  return std::sqrt(-2.0 * std::log(u)) * std::cos(kTwoPi * v);
}

}  // namespace stoker::ops
