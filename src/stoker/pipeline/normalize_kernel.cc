#include "stoker/pipeline/normalize_kernel.h"

namespace stoker {
namespace {

// The loop both builds share; inlined into each, so each gets its own instruction set. One
// loop per unit scale, so the vectorised body has no branch.
template <image::UnitScale kUnit>
__attribute__((always_inline)) inline void normalize_loop(const uint8_t* __restrict in,
                                                          float* __restrict out, int64_t n,
                                                          float mean, float std) {
  for (int64_t i = 0; i < n; ++i) out[i] = image::float_pixel(in[i], kUnit, mean, std);
}

__attribute__((always_inline)) inline void normalize_any(const uint8_t* in, float* out, int64_t n,
                                                         image::UnitScale unit, float mean,
                                                         float std) {
  if (unit == image::UnitScale::kDivide)
    normalize_loop<image::UnitScale::kDivide>(in, out, n, mean, std);
  else
    normalize_loop<image::UnitScale::kMultiply>(in, out, n, mean, std);
}

}  // namespace

bool cpu_has_avx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

void normalize_u8_baseline(const uint8_t* in, float* out, int64_t n, image::UnitScale unit,
                           float mean, float std) {
  normalize_any(in, out, n, unit, mean, std);
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void normalize_u8_avx2(const uint8_t* in, float* out, int64_t n,
                                                       image::UnitScale unit, float mean,
                                                       float std) {
  normalize_any(in, out, n, unit, mean, std);
}
#else
void normalize_u8_avx2(const uint8_t* in, float* out, int64_t n, image::UnitScale unit, float mean,
                       float std) {
  normalize_any(in, out, n, unit, mean, std);
}
#endif

void normalize_u8(const uint8_t* in, float* out, int64_t n, image::UnitScale unit, float mean,
                  float std) {
  using Kernel = void (*)(const uint8_t*, float*, int64_t, image::UnitScale, float, float);
  static const Kernel kernel = cpu_has_avx2() ? normalize_u8_avx2 : normalize_u8_baseline;
  kernel(in, out, n, unit, mean, std);
}

}  // namespace stoker
