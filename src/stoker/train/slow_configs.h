#pragma once
// Training configurations known to be slow, said before training starts with their fix, and the
// defaults that avoid them. Measured on the 2-core machines stoker targets: bf16 autocast on a
// CPU without native bfloat16 ran 10x slower than float32; 2 compute threads beside a loader
// worker on 2 cores ran 12x slower than 1. Pure functions; thread-safe.

#include <string>
#include <vector>

#include "stoker/train/amp.h"

namespace stoker {

// Compute threads for `threads` = 0 (auto): the cores the loader's `workers` leave, at least 1.
// Any other value is returned as is.
int resolve_compute_threads(int threads, int workers, int cores);

// Why bfloat16 is not native here, or "" if it is: the CPU needs avx512_bf16 or amx_bf16 among
// `cpu_flags` (util/machine.h), and LibTorch's CPU kernels must use them (`torch_capability`,
// libtorch_cpu_capability(): "AVX512"; Debian's 1.13 uses AVX2 even on such a CPU).
std::string bf16_not_native(const std::vector<std::string>& cpu_flags,
                            const std::string& torch_capability);

// The instruction set LibTorch's CPU kernels dispatch to ("DEFAULT", "AVX2", "AVX512"), from
// at::show_config(); "" if it does not say.
std::string libtorch_cpu_capability();

// One line per slow configuration among these settings, each naming the fix; empty if none.
// `cpu` is true when training runs on the CPU; `no_native_bf16` is bf16_not_native's reason.
std::vector<std::string> slow_configuration_warnings(AmpMode amp, bool cpu,
                                                     const std::string& no_native_bf16, int threads,
                                                     int workers, int cores);

}  // namespace stoker
