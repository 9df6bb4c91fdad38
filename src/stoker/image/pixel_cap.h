#pragma once
// The decompression-bomb check shared by the JPEG and PNG readers.

#include <fmt/format.h>

#include <cstdint>

#include "stoker/util/status.h"

namespace stoker::image {

// Ok if a `width` x `height` image has at most `max_pixels` pixels, else a one-line kUnsupported
// naming `format` ("JPEG", "PNG").
inline Status check_pixel_cap(const char* format, int64_t width, int64_t height,
                              int64_t max_pixels) {
  const int64_t pixels = width * height;
  if (pixels <= max_pixels) return Status::ok();
  return unsupported(fmt::format("{}: {}x{} is {} pixels, over the cap of {}", format, width,
                                 height, pixels, max_pixels));
}

}  // namespace stoker::image
