#include "stoker/util/machine.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace stoker {
namespace {

TEST(MachineTest, CoresAndMemoryAreThisProcesss) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(machine_cores(), CPU_COUNT(&set));
  EXPECT_LE(machine_cores(), static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_GT(machine_memory_bytes(), uint64_t{64} << 20);
}

TEST(MachineTest, CpuFlagsOfTheFirstProcessor) {
  const std::string cpuinfo =
      "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: sse2 avx512_bf16 avx2\n\n"
      "processor\t: 1\nflags\t\t: sse2 amx_bf16\n";
  const std::vector<std::string> flags = cpu_flags(cpuinfo);
  EXPECT_EQ(flags, (std::vector<std::string>{"avx2", "avx512_bf16", "sse2"}));
  EXPECT_TRUE(has_native_bf16(flags));
  EXPECT_TRUE(has_native_bf16(cpu_flags("flags : amx_bf16 avx2\n")));
  EXPECT_FALSE(has_native_bf16(cpu_flags("flags : avx2 avx512f avx512bw\n")));
  EXPECT_TRUE(cpu_flags("model name : x\n").empty());
  EXPECT_FALSE(machine_cpu_flags().empty()) << "Linux lists the flags in /proc/cpuinfo";
}

TEST(MachineTest, CpuVendorOfTheFirstProcessor) {
  EXPECT_EQ(cpu_vendor("processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: sse2\n\n"
                       "processor\t: 1\nvendor_id\t: GenuineIntel\n"),
            "AuthenticAMD");
  EXPECT_EQ(cpu_vendor("vendor_id_extra : x\nflags : sse2\n"), "");
  EXPECT_FALSE(machine_cpu_vendor().empty()) << "Linux names the vendor in /proc/cpuinfo";
}

}  // namespace
}  // namespace stoker
