#pragma once
// Beta(a, b) drawn from a stoker stream: the mixing weight of MixUp and CutMix (ops/mixup.cc,
// cutmix.cc, mixup_cutmix.cc, timm_mixup.cc). A distribution, not torch's or numpy's sequence:
// its test compares it with the Beta CDF (Kolmogorov-Smirnov, ops/beta_draw_test.cc).
//
//   u                 1 - next_double(), in (0, 1]
//   standard normal   normal_draw.h's Box-Muller
//   log Gamma(k >= 1) Marsaglia and Tsang (ACM TOMS 2000): d = k - 1/3, c = 1 / sqrt(9 d);
//                     repeat z normal, v = (1 + c z)^3 until v > 0 and
//                     log u < z^2 / 2 + d - d v + d log v; log(d v)
//   log Gamma(k < 1)  log Gamma(k + 1) + log(u) / k (the boost; in logs, so that a small k,
//                     MixUp's 0.2, never underflows to 0)
//   Beta(a, b)        1 / (1 + exp(log Y - log X)), X ~ Gamma(a) drawn before Y ~ Gamma(b)
//   Dirichlet(a, k)   k Gamma(a) draws in order, each exp(log X_i - max) over their sum
//                     (AugMix's weights: ops/timm_augmix.cc, ops/augmix.cc)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "stoker/pipeline/ops/normal_draw.h"
#include "stoker/util/rng.h"

namespace stoker::ops {

// The log of a Gamma(k, 1) draw. Precondition: k > 0 and finite.
inline double log_gamma_draw(CounterRng& rng, double k) {
  if (k < 1) {
    const double boosted = log_gamma_draw(rng, k + 1);
    return boosted + std::log(1.0 - rng.next_double()) / k;
  }
  const double d = k - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    const double z = standard_normal(rng);
    const double t = 1.0 + c * z;
    if (t <= 0) continue;
    const double v = t * t * t;
    const double u = 1.0 - rng.next_double();
    if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) return std::log(d * v);
  }
}

// A Beta(a, b) draw in [0, 1]. Precondition: a, b > 0 and finite. Where both logs underflow to
// -infinity (a and b far below 1e-300), 0.5.
inline double beta_draw(CounterRng& rng, double a, double b) {
  const double log_x = log_gamma_draw(rng, a);
  const double log_y = log_gamma_draw(rng, b);
  const double difference = log_y - log_x;
  return std::isnan(difference) ? 0.5 : 1.0 / (1.0 + std::exp(difference));
}

// A Dirichlet draw of `count` weights, all `alpha`: non-negative, summing to 1. Precondition:
// alpha > 0 and finite, count >= 1.
inline std::vector<double> dirichlet_draw(CounterRng& rng, double alpha, int64_t count) {
  std::vector<double> weights;
  for (int64_t i = 0; i < count; ++i) weights.push_back(log_gamma_draw(rng, alpha));
  const double top = *std::max_element(weights.begin(), weights.end());
  double sum = 0;
  for (double& w : weights) sum += (w = std::isinf(top) ? 1.0 : std::exp(w - top));
  for (double& w : weights) w /= sum;
  return weights;
}

}  // namespace stoker::ops
