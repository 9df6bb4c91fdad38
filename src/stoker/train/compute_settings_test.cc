#include "stoker/train/compute_settings.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(ComputeSettingsTest, TurnsOnCudnnAutotuning) {
  at::globalContext().setBenchmarkCuDNN(false);
  set_compute_settings(1);
  EXPECT_TRUE(at::globalContext().benchmarkCuDNN());
}

TEST(ComputeSettingsTest, BoundsLibTorchAndOpenBlas) {
  set_compute_settings(1);
  EXPECT_EQ(at::get_num_threads(), 1);
  using GetThreads = int (*)();
  auto get_openblas =
      reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (get_openblas == nullptr) GTEST_SKIP() << "the BLAS in this process is not OpenBLAS";
  EXPECT_EQ(get_openblas(), 1);
  set_compute_settings(2);
  EXPECT_EQ(get_openblas(), 2);
  EXPECT_EQ(at::get_num_threads(), 2);
  set_compute_settings(1);
}

}  // namespace
}  // namespace stoker
