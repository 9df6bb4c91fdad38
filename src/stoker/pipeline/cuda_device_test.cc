#include "stoker/pipeline/cuda_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "stoker/pipeline/feed_protocol.h"

namespace stoker {
namespace {

// The protocol over the CUDA runtime: batches written in pinned memory arrive on the GPU, read
// back on the consumer's stream, each as written. Skipped where no GPU is visible.
TEST(CudaDevice, FeedsBatchesToTheConsumer) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) GTEST_SKIP() << "no GPU visible";
  constexpr size_t kBytes = 1 << 20;
  auto device = std::make_shared<CudaDevice>(0, nullptr);
  const HostAllocator pinned = device->host_allocator();
  FeedProtocol feed(device, 2);
  for (int b = 0; b < 16; ++b) {
    std::shared_ptr<uint8_t> host = pinned(kBytes);
    std::memset(host.get(), b + 1, kBytes);
    DeviceBatch batch = feed.deliver(feed.start({{{host.get(), kBytes}}, host}));
    std::vector<uint8_t> back(kBytes);
    ASSERT_EQ(cudaMemcpyAsync(back.data(), batch.fields[0], kBytes, cudaMemcpyDeviceToHost,
                              /*the consumer's, legacy default stream*/ nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    EXPECT_TRUE(std::all_of(back.begin(), back.end(), [&](uint8_t v) { return v == b + 1; }))
        << "batch " << b;
  }
}

}  // namespace
}  // namespace stoker
