#pragma once
// JpegMemoryDestination: where libjpeg's compressor writes — one malloc'd buffer that grows by
// doubling — for the transcoder (jpeg_transcode.cc) and the encoder (jpeg_encode.cc).

// clang-format off
#include <cstdio>  // before jpeglib.h, which uses FILE and size_t
#include <jpeglib.h>
// clang-format on

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoker/util/status.h"

namespace stoker::image {

// A jpeg_destination_mgr over a buffer this object owns (freed with it, so nothing leaks when
// libjpeg fails half-way and longjmps past the compressor). Running out of memory while growing
// is a libjpeg error (JERR_OUT_OF_MEMORY) raised through the compressor's error manager. Not
// copyable or movable: libjpeg holds a pointer to it. Thread-compatible: one compressor at a
// time.
class JpegMemoryDestination {
 public:
  JpegMemoryDestination() = default;
  ~JpegMemoryDestination();
  JpegMemoryDestination(const JpegMemoryDestination&) = delete;
  JpegMemoryDestination& operator=(const JpegMemoryDestination&) = delete;

  // Allocates the first `capacity` bytes (at least 1; more are added as needed) and makes the
  // destination empty. kInternal, one line, when out of memory.
  Status start(size_t capacity);

  // For jpeg_compress_struct::dest; valid while this object lives.
  jpeg_destination_mgr* mgr() { return &mgr_; }

  // A copy of the bytes written since start().
  std::vector<uint8_t> bytes() const;

 private:
  static void init(j_compress_ptr cinfo);
  static boolean grow(j_compress_ptr cinfo);
  static void term(j_compress_ptr cinfo);

  jpeg_destination_mgr mgr_{};  // first member: libjpeg's pointer to it is a pointer to this
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace stoker::image
