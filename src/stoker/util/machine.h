#pragma once
// What the machine offers this process: cores it may run on, physical memory, CPU features.
// Read from the system on each call (sched_getaffinity, sysconf, /proc/cpuinfo); thread-safe.

#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

// Cores this process may run on (its CPU affinity mask), at least 1.
int machine_cores();

// Physical memory in bytes; 0 if the system does not say.
uint64_t machine_memory_bytes();

// The CPU feature flags of the first processor in `cpuinfo` (the text of /proc/cpuinfo), sorted.
std::vector<std::string> cpu_flags(const std::string& cpuinfo);
// The flags of this machine's CPU; empty where /proc/cpuinfo is not readable.
std::vector<std::string> machine_cpu_flags();
// The vendor of the first processor in `cpuinfo` ("GenuineIntel", "AuthenticAMD"), "" if none.
std::string cpu_vendor(const std::string& cpuinfo);
// This machine's CPU vendor; "" where /proc/cpuinfo is not readable.
std::string machine_cpu_vendor();

// True if the CPU computes bfloat16 natively (AVX512-BF16 or AMX-BF16): without them bf16
// autocast on the CPU runs through conversions, several times slower than float32.
bool has_native_bf16(const std::vector<std::string>& flags);

}  // namespace stoker
