#include "stoker/pipeline/normalize_kernel.h"

namespace stoker {
namespace {

// The loop both builds share; inlined into each, so each gets its own instruction set.
__attribute__((always_inline)) inline void normalize_loop(const uint8_t* __restrict in,
                                                          float* __restrict out, int64_t n,
                                                          float scale, float bias) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]) * scale + bias;
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

void normalize_u8_baseline(const uint8_t* in, float* out, int64_t n, float scale, float bias) {
  normalize_loop(in, out, n, scale, bias);
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void normalize_u8_avx2(const uint8_t* in, float* out, int64_t n,
                                                       float scale, float bias) {
  normalize_loop(in, out, n, scale, bias);
}
#else
void normalize_u8_avx2(const uint8_t* in, float* out, int64_t n, float scale, float bias) {
  normalize_loop(in, out, n, scale, bias);
}
#endif

void normalize_u8(const uint8_t* in, float* out, int64_t n, float scale, float bias) {
  using Kernel = void (*)(const uint8_t*, float*, int64_t, float, float);
  static const Kernel kernel = cpu_has_avx2() ? normalize_u8_avx2 : normalize_u8_baseline;
  kernel(in, out, n, scale, bias);
}

}  // namespace stoker
