#include "stoker/train/slow_configs.h"

#include <ATen/Version.h>
#include <fmt/format.h>

#include <algorithm>

#include "stoker/util/machine.h"

namespace stoker {

int resolve_compute_threads(int threads, int workers, int cores) {
  return threads > 0 ? threads : std::max(1, cores - workers);
}

std::string bf16_not_native(const std::vector<std::string>& cpu_flags,
                            const std::string& torch_capability) {
  if (!has_native_bf16(cpu_flags)) return "the CPU has no avx512_bf16 or amx_bf16";
  if (torch_capability != "AVX512")
    return "LibTorch's CPU kernels use " + (torch_capability.empty() ? "?" : torch_capability) +
           ", not AVX512";
  return "";
}

std::string libtorch_cpu_capability() {
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  const size_t at = config.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return config.substr(start, config.find_first_of("\n ", start) - start);
}

std::vector<std::string> slow_configuration_warnings(AmpMode amp, bool cpu,
                                                     const std::string& no_native_bf16, int threads,
                                                     int workers, int cores) {
  std::vector<std::string> warnings;
  if (amp == AmpMode::kBf16 && cpu && !no_native_bf16.empty()) {
    warnings.push_back(
        "warning: --amp bf16 without native bfloat16 (" + no_native_bf16 +
        ") converts every operation and runs several times slower than float32 (10x measured "
        "on a 2-core machine); use --amp off");
  }
  if (threads + workers > cores) {
    // Fewer threads where the workers leave a core; else fewer workers (a thread computes).
    std::string advice = fmt::format("use --workers {} (a core left for the compute thread)",
                                     std::max(1, cores - 1));
    if (workers < cores) {
      advice = fmt::format("use --threads {} (or leave --threads out: the cores the workers leave)",
                           cores - workers);
    }
    warnings.push_back(fmt::format(
        "warning: {} compute thread{} + {} loader worker{} exceed this machine's {} core{}: they "
        "take turns (12x slower measured with 2 + 1 on 2 cores); {}",
        threads, threads == 1 ? "" : "s", workers, workers == 1 ? "" : "s", cores,
        cores == 1 ? "" : "s", advice));
  }
  return warnings;
}

}  // namespace stoker
