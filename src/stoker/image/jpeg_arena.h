#pragma once
// JpegArena: where a reused decompressor's per-image memory comes from. libjpeg allocates what
// one image needs (tables, sample rows, the entropy decoder's state) in its JPOOL_IMAGE pool
// and frees the pool at the end of each image: a few malloc/free pairs per image, and more for
// every image of a new size. Installed on a decompressor, the arena serves that pool from
// memory it keeps: reset (not freed) with the pool, grown to half again the largest image's need
// and then reused, so that decoding allocates nothing in steady state. Virtual arrays (the
// coefficient buffer of a multi-scan JPEG) and the permanent pool still come from libjpeg's own
// manager.

// clang-format off
#include <cstdio>  // before jpeglib.h
#include <jpeglib.h>
// clang-format on

#include <cstddef>
#include <cstdint>

namespace stoker::image {

class JpegArena {
 public:
  JpegArena() = default;
  ~JpegArena();
  JpegArena(const JpegArena&) = delete;
  JpegArena& operator=(const JpegArena&) = delete;

  // Routes `cinfo`'s JPOOL_IMAGE allocations to this arena until jpeg_destroy. Call once, right
  // after jpeg_create_decompress; the arena must outlive `cinfo`. Uses cinfo->client_data.
  void install(j_decompress_ptr cinfo);

  // Before each image but the first: forgets the quantisation and Huffman tables the last image
  // defined, as a new decompressor has none (libjpeg would otherwise decode a JPEG that lacks a
  // table with the last one's, where a new decompressor fails or uses the standard Huffman
  // tables). libjpeg keeps tables in its permanent pool; their memory is handed out again when
  // it asks for new ones, so that the pool does not grow from image to image.
  void forget_tables(j_decompress_ptr cinfo);

 private:
  // `bytes` aligned to 64 bytes (what libjpeg-turbo's SIMD code needs), or null when out of
  // memory. Allocates only while an image needs more than any before it.
  void* allocate(size_t bytes);
  // Forgets every allocation; the memory is kept (merged into one block if it grew).
  void reset();

  static void* alloc_small(j_common_ptr cinfo, int pool, size_t bytes);
  static JSAMPARRAY alloc_sarray(j_common_ptr cinfo, int pool, JDIMENSION samples, JDIMENSION rows);
  static JBLOCKARRAY alloc_barray(j_common_ptr cinfo, int pool, JDIMENSION blocks, JDIMENSION rows);
  static void free_pool(j_common_ptr cinfo, int pool);

  // libjpeg's own methods, for the other pools.
  jpeg_memory_mgr original_{};
  // Forgotten tables' memory, for the permanent pool's next requests of their sizes.
  JQUANT_TBL* spare_quant_[NUM_QUANT_TBLS] = {};
  int spare_quant_count_ = 0;
  JHUFF_TBL* spare_huff_[2 * NUM_HUFF_TBLS] = {};
  int spare_huff_count_ = 0;
  // The memory served from: capacity_ bytes, used_ of them.
  uint8_t* block_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  // What did not fit, since the last reset: chunks malloc'd separately (each at least twice the
  // last), freed at the reset; block_ then grows to `wanted_` at the next allocation.
  uint8_t* chunks_[48] = {};
  int chunk_count_ = 0;
  size_t chunk_size_ = 0;  // the last chunk's, chunk_used_ of it used
  size_t chunk_used_ = 0;
  size_t overflow_ = 0;  // bytes served from chunks
  size_t wanted_ = 0;    // the most bytes an image has taken
};

}  // namespace stoker::image
