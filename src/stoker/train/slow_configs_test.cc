#include "stoker/train/slow_configs.h"

#include <gtest/gtest.h>

#include <string>

namespace stoker {
namespace {

TEST(SlowConfigsTest, AutoThreadsAreTheCoresTheWorkersLeave) {
  EXPECT_EQ(resolve_compute_threads(0, 1, 2), 1);
  EXPECT_EQ(resolve_compute_threads(0, 2, 8), 6);
  EXPECT_EQ(resolve_compute_threads(0, 4, 2), 1);  // at least one
  EXPECT_EQ(resolve_compute_threads(3, 1, 2), 3);  // given: kept (and warned about)
}

TEST(SlowConfigsTest, Bf16IsNativeWithTheCpuFlagAndAvx512Kernels) {
  const std::vector<std::string> bf16_cpu = {"avx2", "avx512_bf16", "avx512f"};
  EXPECT_EQ(bf16_not_native(bf16_cpu, "AVX512"), "");
  EXPECT_EQ(bf16_not_native(bf16_cpu, "AVX2"), "LibTorch's CPU kernels use AVX2, not AVX512");
  EXPECT_EQ(bf16_not_native({"avx2", "avx512f"}, "AVX512"),
            "the CPU has no avx512_bf16 or amx_bf16");
  const std::string capability = libtorch_cpu_capability();
  EXPECT_TRUE(capability == "DEFAULT" || capability == "AVX2" || capability == "AVX512")
      << capability;

  const auto slow = slow_configuration_warnings(AmpMode::kBf16, true, "the reason", 1, 1, 2);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].rfind("warning: --amp bf16 without native bfloat16 (the reason)", 0), 0u);
  EXPECT_NE(slow[0].find("use --amp off"), std::string::npos);
  EXPECT_TRUE(slow_configuration_warnings(AmpMode::kBf16, true, "", 1, 1, 2).empty());
  EXPECT_TRUE(slow_configuration_warnings(AmpMode::kBf16, false, "the reason", 1, 1, 2).empty());
  EXPECT_TRUE(slow_configuration_warnings(AmpMode::kOff, true, "the reason", 1, 1, 2).empty());
}

// The one warning of `threads` threads and `workers` workers on `cores` cores, training without
// AMP; empty when there is none.
std::string oversubscribed(int threads, int workers, int cores) {
  const auto warnings =
      slow_configuration_warnings(AmpMode::kOff, true, "", threads, workers, cores);
  EXPECT_LE(warnings.size(), 1u);
  return warnings.empty() ? "" : warnings[0];
}

TEST(SlowConfigsTest, ThreadsAndWorkersBeyondTheCores) {
  const std::string turns = "take turns (12x slower measured with 2 + 1 on 2 cores); ";
  EXPECT_EQ(oversubscribed(2, 1, 2),
            "warning: 2 compute threads + 1 loader worker exceed this machine's 2 cores: they " +
                turns + "use --threads 1 (or leave --threads out: the cores the workers leave)");
  // As many workers as cores: fewer threads cannot help, fewer workers can.
  EXPECT_EQ(oversubscribed(1, 4, 4),
            "warning: 1 compute thread + 4 loader workers exceed this machine's 4 cores: they " +
                turns + "use --workers 3 (a core left for the compute thread)");
  EXPECT_EQ(oversubscribed(1, 1, 2), "");
  EXPECT_EQ(oversubscribed(6, 2, 8), "");
  EXPECT_EQ(slow_configuration_warnings(AmpMode::kBf16, true, "no", 1, 4, 2).size(), 2u);
}

}  // namespace
}  // namespace stoker
