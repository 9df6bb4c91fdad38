// Built where LibTorch has CUDA (src/stoker/pipeline/CMakeLists.txt).
#include <ATen/detail/CUDAHooksInterface.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

namespace stoker {
namespace {

// A program linking stoker loads one CUDA runtime (one libcudart.so.N), shared with
// libtorch_cuda: it must be at least as new as the CUDA torch was built with and the toolkit
// stoker's code was compiled against. A toolkit older than torch's CUDA would run libtorch_cuda
// on its older runtime, so the build links torch's (cmake/StokerTorch.cmake). No GPU needed.
TEST(CudaRuntime, IsAtLeastTorchsAndTheToolkits) {
  int runtime = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  EXPECT_GE(runtime, at::detail::getCUDAHooks().versionCUDART()) << "torch's CUDA";
  EXPECT_GE(runtime, CUDART_VERSION) << "the toolkit's headers";
}

}  // namespace
}  // namespace stoker
