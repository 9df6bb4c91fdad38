#include "stoker/train/compute_threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(ComputeThreadsTest, BoundsLibTorchAndOpenBlas) {
  set_compute_threads(1);
  EXPECT_EQ(at::get_num_threads(), 1);
  using GetThreads = int (*)();
  auto get_openblas =
      reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (get_openblas == nullptr) GTEST_SKIP() << "the BLAS in this process is not OpenBLAS";
  EXPECT_EQ(get_openblas(), 1);
  set_compute_threads(2);
  EXPECT_EQ(get_openblas(), 2);
  EXPECT_EQ(at::get_num_threads(), 2);
  set_compute_threads(1);
}

}  // namespace
}  // namespace stoker
