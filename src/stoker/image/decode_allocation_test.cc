// The per-image path of a training sample — decode a crop of a stored JPEG, resample it into the
// batch slot, materialised or streamed — allocates nothing in steady state: a second epoch over the
// same images, with other crops, makes no call to malloc and its kin. Counted by replacing them in
// this binary (forwarding to glibc's), which is why this is a test program of its own, and why it
// is not built with sanitizers (they replace malloc themselves).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/image/jpeg_transcode.h"
#include "stoker/image/resample.h"
#include "stoker/testing/test_images.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {
std::atomic<long> allocations{0};
}  // namespace

extern "C" {
void* malloc(size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, n);
}
void* memalign(size_t alignment, size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** p, size_t alignment, size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  *p = __libc_memalign(alignment, n);
  return *p != nullptr ? 0 : ENOMEM;
}
void free(void* p) { __libc_free(p); }
}

namespace stoker::image::test {
namespace {

using testing::encode_jpeg;
using testing::JpegSpec;

// A stored JPEG as the import writes it (transcoded), and its size (which the loader reads from
// the record, not the header).
struct Stored {
  std::vector<uint8_t> bytes;
  int width, height;
};

// Stored JPEGs of several sizes and samplings.
std::vector<Stored> stored_jpegs() {
  std::vector<Stored> out;
  for (const auto& [w, h, components, hs] : std::vector<std::tuple<int, int, int, int>>{
           {320, 240, 3, 2}, {500, 375, 3, 2}, {257, 301, 3, 1}, {400, 300, 1, 1}}) {
    JpegSpec spec;
    spec.width = w;
    spec.height = h;
    spec.components = components;
    spec.h_sampling = hs;
    spec.v_sampling = hs;
    const std::vector<uint8_t> jpeg = encode_jpeg(spec);
    out.push_back({transcode_jpeg_for_crops({jpeg.data(), jpeg.size()}).value_or_throw(), w, h});
  }
  return out;
}

// One epoch: a random crop of each image (the whole image with `whole`), decoded (DCT-scaled
// where the fast mode would) and resampled to 64 x 64 float32, from the decoded crop and, as the
// loader's transforms do, from its rows streamed into the resize.
void epoch(const std::vector<Stored>& images, uint32_t seed, bool whole, DecodeBuffer& buffer,
           Resampler& resampler, std::vector<uint8_t>& slot) {
  std::mt19937 rng(seed);
  ResampleOutput out;
  out.width = out.height = 64;
  out.type = ResampleOutput::Type::kFloat32;
  for (const Stored& image : images) {
    const std::vector<uint8_t>& bytes = image.bytes;
    for (int variant = 0; variant < 4; ++variant) {
      const bool scaled = variant & 1, streamed = variant & 2;
      CropRect crop{0, 0, image.width, image.height};
      if (!whole) {
        crop.width = std::uniform_int_distribution<int>(1, image.width)(rng);
        crop.height = std::uniform_int_distribution<int>(1, image.height)(rng);
        crop.x = std::uniform_int_distribution<int>(0, image.width - crop.width)(rng);
        crop.y = std::uniform_int_distribution<int>(0, image.height - crop.height)(rng);
      }
      DecodeRequest request;
      request.crop = crop;
      if (scaled) request.min_width = request.min_height = 64;
      const ByteSpan span{bytes.data(), bytes.size()};
      if (streamed) {
        Result<DecodedRows*> rows = decode_rgb_rows(span, request, buffer);
        ASSERT_TRUE(rows.is_ok()) << rows.status().message();
        const Status s = resampler.resample(*rows.value(), rows.value()->box, out, slot.data());
        ASSERT_TRUE(s.is_ok()) << s.message();
        continue;
      }
      Result<DecodedCrop> d = decode_rgb(span, request, buffer);
      ASSERT_TRUE(d.is_ok()) << d.status().message();
      const Status s = resampler.resample(d.value().pixels, d.value().box, out, slot.data());
      ASSERT_TRUE(s.is_ok()) << s.message();
    }
  }
}

TEST(DecodeAllocationTest, ASecondEpochAllocatesNothing) {
  const std::vector<Stored> images = stored_jpegs();
  DecodeBuffer buffer;
  Resampler resampler(ResampleKernel::kSimd);
  std::vector<uint8_t> slot(3 * 64 * 64 * 4);
  // Warm up: every image whole (the most memory a decode of it needs), then random crops (whose
  // restart windows, a decoder of their own, vary).
  epoch(images, 1, true, buffer, resampler, slot);
  for (uint32_t seed = 2; seed < 5; ++seed) epoch(images, seed, false, buffer, resampler, slot);
  const long before = allocations.load();
  for (uint32_t seed = 5; seed < 15; ++seed) epoch(images, seed, false, buffer, resampler, slot);
  EXPECT_EQ(allocations.load() - before, 0);
  // The counter counts: a decoder made afresh allocates.
  const long counted = allocations.load();
  DecodeBuffer fresh;
  epoch(images, 3, false, fresh, resampler, slot);
  EXPECT_GT(allocations.load(), counted);
}

}  // namespace
}  // namespace stoker::image::test
