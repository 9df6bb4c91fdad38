#include "stoker/util/machine.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace stoker {

int machine_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
}

uint64_t machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

namespace {

// The value of the first line of `cpuinfo` whose key is `key`, "" if none.
std::string cpuinfo_value(const std::string& cpuinfo, const std::string& key) {
  std::istringstream lines(cpuinfo);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name == key) return line.substr(colon + 1);
  }
  return "";
}

std::string machine_cpuinfo() {
  std::ifstream in("/proc/cpuinfo");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<std::string> cpu_flags(const std::string& cpuinfo) {
  std::istringstream words(cpuinfo_value(cpuinfo, "flags"));
  std::vector<std::string> flags;
  for (std::string flag; words >> flag;) flags.push_back(flag);
  std::sort(flags.begin(), flags.end());
  return flags;
}

std::vector<std::string> machine_cpu_flags() { return cpu_flags(machine_cpuinfo()); }

std::string cpu_vendor(const std::string& cpuinfo) {
  std::istringstream words(cpuinfo_value(cpuinfo, "vendor_id"));
  std::string vendor;
  words >> vendor;
  return vendor;
}

std::string machine_cpu_vendor() { return cpu_vendor(machine_cpuinfo()); }

bool has_native_bf16(const std::vector<std::string>& flags) {
  return std::binary_search(flags.begin(), flags.end(), "avx512_bf16") ||
         std::binary_search(flags.begin(), flags.end(), "amx_bf16");
}

}  // namespace stoker
