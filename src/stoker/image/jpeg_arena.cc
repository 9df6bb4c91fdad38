// clang-format off
#include "stoker/image/jpeg_arena.h"
#include <jerror.h>  // after jpeglib.h
// clang-format on

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace stoker::image {
namespace {

constexpr size_t kAlign = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

JpegArena* arena_of(j_common_ptr cinfo) { return static_cast<JpegArena*>(cinfo->client_data); }

}  // namespace

JpegArena::~JpegArena() {
  reset();
  std::free(block_);
}

void JpegArena::install(j_decompress_ptr cinfo) {
  cinfo->client_data = this;
  original_ = *cinfo->mem;
  cinfo->mem->alloc_small = alloc_small;
  cinfo->mem->alloc_large = alloc_small;
  cinfo->mem->alloc_sarray = alloc_sarray;
  cinfo->mem->alloc_barray = alloc_barray;
  cinfo->mem->free_pool = free_pool;
}

void JpegArena::forget_tables(j_decompress_ptr cinfo) {
  for (JQUANT_TBL*& table : cinfo->quant_tbl_ptrs) {
    if (table != nullptr) spare_quant_[spare_quant_count_++] = table;
    table = nullptr;
  }
  for (int i = 0; i < NUM_HUFF_TBLS; ++i) {
    for (JHUFF_TBL** table : {&cinfo->dc_huff_tbl_ptrs[i], &cinfo->ac_huff_tbl_ptrs[i]}) {
      if (*table != nullptr) spare_huff_[spare_huff_count_++] = *table;
      *table = nullptr;
    }
  }
}

void* JpegArena::allocate(size_t bytes) {
  bytes = round_up(bytes, kAlign);
  if (capacity_ < wanted_ && used_ == 0 && chunk_count_ == 0) {  // grow, between images
    std::free(block_);
    capacity_ = round_up(wanted_ + wanted_ / 2, 4096);  // room for a larger image to come
    block_ = static_cast<uint8_t*>(std::aligned_alloc(kAlign, capacity_));
    if (block_ == nullptr) capacity_ = 0;
  }
  if (used_ + bytes <= capacity_) {
    void* p = block_ + used_;
    used_ += bytes;
    return p;
  }
  if (chunk_count_ == 0 || chunk_used_ + bytes > chunk_size_) {
    if (chunk_count_ == static_cast<int>(std::size(chunks_))) return nullptr;
    chunk_size_ = std::max({bytes, size_t{1} << 16, 2 * chunk_size_});
    auto* chunk = static_cast<uint8_t*>(std::aligned_alloc(kAlign, chunk_size_));
    if (chunk == nullptr) return nullptr;
    chunks_[chunk_count_++] = chunk;
    chunk_used_ = 0;
  }
  void* p = chunks_[chunk_count_ - 1] + chunk_used_;
  chunk_used_ += bytes;
  overflow_ += bytes;
  return p;
}

void JpegArena::reset() {
  wanted_ = std::max(wanted_, used_ + overflow_);
  for (int i = 0; i < chunk_count_; ++i) std::free(chunks_[i]);
  chunk_count_ = 0;
  chunk_size_ = 0;
  chunk_used_ = 0;
  overflow_ = 0;
  used_ = 0;
}

void* JpegArena::alloc_small(j_common_ptr cinfo, int pool, size_t bytes) {
  JpegArena* arena = arena_of(cinfo);
  if (pool != JPOOL_IMAGE) {
    // A table (jpeg_alloc_quant_table, jpeg_alloc_huff_table): a forgotten one's memory.
    if (bytes == sizeof(JQUANT_TBL) && arena->spare_quant_count_ > 0) {
      return arena->spare_quant_[--arena->spare_quant_count_];
    }
    if (bytes == sizeof(JHUFF_TBL) && arena->spare_huff_count_ > 0) {
      return arena->spare_huff_[--arena->spare_huff_count_];
    }
    return arena->original_.alloc_small(cinfo, pool, bytes);
  }
  void* p = arena->allocate(bytes);
  if (p == nullptr) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 7);
  return p;
}

JSAMPARRAY JpegArena::alloc_sarray(j_common_ptr cinfo, int pool, JDIMENSION samples,
                                   JDIMENSION rows) {
  if (pool != JPOOL_IMAGE) {
    return arena_of(cinfo)->original_.alloc_sarray(cinfo, pool, samples, rows);
  }
  // As libjpeg-turbo's own: one block of rows of a multiple of 64 samples (SIMD code may run
  // past a row's end up to that).
  const size_t row_bytes = round_up(samples * sizeof(JSAMPLE), 64);
  auto* array = static_cast<JSAMPARRAY>(alloc_small(cinfo, pool, rows * sizeof(JSAMPROW)));
  auto* data = static_cast<JSAMPLE*>(alloc_small(cinfo, pool, rows * row_bytes));
  for (JDIMENSION r = 0; r < rows; ++r) array[r] = data + r * row_bytes;
  return array;
}

JBLOCKARRAY JpegArena::alloc_barray(j_common_ptr cinfo, int pool, JDIMENSION blocks,
                                    JDIMENSION rows) {
  if (pool != JPOOL_IMAGE) {
    return arena_of(cinfo)->original_.alloc_barray(cinfo, pool, blocks, rows);
  }
  auto* array = static_cast<JBLOCKARRAY>(alloc_small(cinfo, pool, rows * sizeof(JBLOCKROW)));
  auto* data =
      static_cast<JBLOCKROW>(alloc_small(cinfo, pool, size_t{rows} * blocks * sizeof(JBLOCK)));
  for (JDIMENSION r = 0; r < rows; ++r) array[r] = data + size_t{r} * blocks;
  return array;
}

void JpegArena::free_pool(j_common_ptr cinfo, int pool) {
  JpegArena* arena = arena_of(cinfo);
  arena->original_.free_pool(cinfo, pool);
  if (pool == JPOOL_IMAGE) arena->reset();
}

}  // namespace stoker::image
