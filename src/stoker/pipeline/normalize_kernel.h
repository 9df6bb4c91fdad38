#pragma once
// The loader's per-pixel kernel: out[i] = image::float_pixel(in[i], unit, mean, std), uint8 in,
// float32 out, torchvision's value bit for bit (image/float_pixel.h). Two builds of one loop:
// the baseline x86-64 one (SSE2) and an AVX2 one, chosen once at start-up from the CPU.
// Dispatch is a plain function pointer, not a GCC ifunc (target_clones), because ifunc
// resolvers run before the sanitizer runtimes start and crash ThreadSanitizer builds.

#include <cstdint>

#include "stoker/image/float_pixel.h"

namespace stoker {

// With the fastest build this CPU runs (picked on the first call; thread-safe).
void normalize_u8(const uint8_t* in, float* out, int64_t n, image::UnitScale unit, float mean,
                  float std);

// Both builds, for tests and benchmarks. normalize_u8_avx2 needs a CPU with AVX2
// (cpu_has_avx2()).
void normalize_u8_baseline(const uint8_t* in, float* out, int64_t n, image::UnitScale unit,
                           float mean, float std);
void normalize_u8_avx2(const uint8_t* in, float* out, int64_t n, image::UnitScale unit, float mean,
                       float std);
bool cpu_has_avx2();

}  // namespace stoker
