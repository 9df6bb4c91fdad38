// clang-format off
#include "stoker/image/jpeg_memory_destination.h"
#include <jerror.h>  // after jpeglib.h
// clang-format on

#include <algorithm>
#include <cstdlib>
#include <type_traits>

namespace stoker::image {

static_assert(std::is_standard_layout_v<JpegMemoryDestination>,
              "libjpeg's jpeg_destination_mgr* must convert to the object holding it");

JpegMemoryDestination::~JpegMemoryDestination() { std::free(data_); }

Status JpegMemoryDestination::start(size_t capacity) {
  capacity = std::max<size_t>(capacity, 1);
  auto* data = static_cast<uint8_t*>(std::realloc(data_, capacity));
  if (data == nullptr) return Status(StatusCode::kInternal, "JPEG output: out of memory");
  data_ = data;
  capacity_ = capacity;
  mgr_.next_output_byte = data_;
  mgr_.free_in_buffer = capacity_;
  mgr_.init_destination = init;
  mgr_.empty_output_buffer = grow;
  mgr_.term_destination = term;
  return Status::ok();
}

std::vector<uint8_t> JpegMemoryDestination::bytes() const {
  return std::vector<uint8_t>(data_, data_ + (capacity_ - mgr_.free_in_buffer));
}

void JpegMemoryDestination::init(j_compress_ptr) {}

boolean JpegMemoryDestination::grow(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<JpegMemoryDestination*>(cinfo->dest);
  const size_t used = dest->capacity_;  // empty_output_buffer: the whole buffer is full
  auto* bigger = static_cast<uint8_t*>(std::realloc(dest->data_, used * 2));
  if (bigger == nullptr) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
  dest->data_ = bigger;
  dest->capacity_ = used * 2;
  dest->mgr_.next_output_byte = bigger + used;
  dest->mgr_.free_in_buffer = dest->capacity_ - used;
  return TRUE;
}

void JpegMemoryDestination::term(j_compress_ptr) {}

}  // namespace stoker::image
