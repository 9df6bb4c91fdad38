// `stoker env [--json]`: what a run would find in this process: LibTorch's version and CPU
// capability, its BLAS (the build's setting and the library actually mapped) and thread counts,
// CUDA, whether video is built, the cores and memory of the machine, and the data root. Changes
// nothing.
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/commands.h"
#include "stoker/access/source_registry.h"
#include "stoker/distributed/process_group.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/train/slow_configs.h"
#include "stoker/util/machine.h"

namespace stoker::cli {
namespace {

// The value of `key` in at::show_config()'s "Build settings: K=V, K=V, ..." line; "" if absent.
std::string build_setting(const std::string& config, const std::string& key) {
  const size_t at = config.find(" " + key + "=");
  if (at == std::string::npos) return {};
  const size_t begin = at + key.size() + 2;
  return config.substr(begin, config.find_first_of(",\n", begin) - begin);
}

// The value after "omp_get_max_threads() : " in at::get_parallel_info(); -1 without OpenMP.
int openmp_threads() {
  const std::string info = at::get_parallel_info();
  const std::string key = "omp_get_max_threads() : ";
  const size_t at = info.find(key);
  return at == std::string::npos ? -1 : std::atoi(info.c_str() + at + key.size());
}

// OpenBLAS's thread count when OpenBLAS is the BLAS loaded (it exports openblas_get_num_threads);
// -1 otherwise.
int openblas_threads() {
  using GetThreads = int (*)();
  const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get != nullptr ? get() : -1;
}

// The CPU BLAS and LAPACK libraries mapped into this process (file names from
// /proc/self/maps); CUDA's cuBLAS, which a CUDA LibTorch maps too, is not one. PyPI's LibTorch
// links MKL statically: then none is mapped, and the build setting says which.
std::set<std::string> mapped_blas_libraries() {
  std::set<std::string> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash + 1);
    if (file.rfind("libcublas", 0) == 0) continue;
    if (file.find("blas") != std::string::npos || file.find("lapack") != std::string::npos ||
        file.find("mkl") != std::string::npos)
      out.insert(file);
  }
  return out;
}

// Whether the video layer is built (cmake/StokerVideo.cmake): its source is registered then.
bool video_built() { return find_source("videofolder").is_ok(); }

void run_env(bool json) {
  const std::string config = at::show_config();
  const std::set<std::string> blas_libraries = mapped_blas_libraries();
  const bool cuda = torch::cuda::is_available();
  const nlohmann::json j = {
      {"libtorch", TORCH_VERSION},
      {"cpu_capability", libtorch_cpu_capability()},
      {"blas", build_setting(config, "BLAS_INFO")},
      {"lapack", build_setting(config, "LAPACK_INFO")},
      {"blas_libraries", blas_libraries},
      {"openblas_threads", openblas_threads()},
      {"threads",
       {{"intra_op", at::get_num_threads()},
        {"inter_op", at::get_num_interop_threads()},
        {"openmp", openmp_threads()}}},
      {"cuda", {{"available", cuda}, {"devices", cuda ? torch::cuda::device_count() : 0}}},
      {"nccl", nccl_available()},
      {"video", video_built()},
      {"build", STOKER_BUILD_SUMMARY},
      {"cores", machine_cores()},
      {"memory_bytes", machine_memory_bytes()},
      {"data_root", default_data_root()}};
  if (json) {
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("libtorch  {} (CPU capability {})\n", TORCH_VERSION, libtorch_cpu_capability());
  fmt::print("build     {}\n", STOKER_BUILD_SUMMARY);
  fmt::print("blas      {} (lapack {}); mapped: {}\n", j["blas"].get<std::string>(),
             j["lapack"].get<std::string>(),
             blas_libraries.empty() ? std::string("none")
                                    : fmt::format("{}", fmt::join(blas_libraries, ", ")));
  if (openblas_threads() >= 0) fmt::print("          OpenBLAS threads {}\n", openblas_threads());
  fmt::print("threads   intra-op {}, inter-op {}, OpenMP {} (LibTorch's defaults here)\n",
             at::get_num_threads(), at::get_num_interop_threads(), openmp_threads());
  fmt::print("cuda      {}\n", cuda ? fmt::format("{} device(s)", torch::cuda::device_count())
                                    : std::string("not available"));
  fmt::print("nccl      {}\n",
             nccl_available() ? "built in (--dist-backend nccl)" : "not in this build (gloo only)");
  fmt::print("video     {}\n", video_built() ? "FFmpeg's libav* (decode_clip, videofolder)"
                                             : "not in this build (FFmpeg's libraries were not "
                                               "found at build time: INSTALL.md)");
  fmt::print("machine   {} cores (this process's affinity), {:.1f} GB memory\n", machine_cores(),
             machine_memory_bytes() / 1e9);
  fmt::print("data      {} (STOKER_DATA, else ~/.cache/stoker)\n", default_data_root());
}

}  // namespace

void add_env_command(CLI::App& app) {
  CLI::App* env = app.add_subcommand(
      "env",
      "What a run finds here: LibTorch, BLAS, threads, CUDA, video, cores, memory, data root");
  auto json = std::make_shared<bool>(false);
  env->add_flag("--json", *json, "Print JSON");
  env->callback([json] { run_env(*json); });
}

}  // namespace stoker::cli
