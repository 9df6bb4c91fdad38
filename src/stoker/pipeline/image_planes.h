#pragma once
// An encoded image (JPEG or PNG) at its own size as uint8 planes [3, H, W]: PIL's
// Image.open(...).convert("RGB") + PILToTensor. Shared by the sources that decode without a
// resize (ops/decode_image.cc, joint_pipeline.cc). Thread-safe: each thread decodes into its
// own buffer.

#include <fmt/format.h>

#include <cstdint>

#include "stoker/image/decode.h"
#include "stoker/image/image_header.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

struct PlanesSize {
  int height = 0, width = 0;
};

// The size the header of `bytes` gives; kInvalidArgument naming it if a side is over
// `max_size`, before anything is decoded.
inline Result<PlanesSize> image_size_within(ByteSpan bytes, int64_t max_size) {
  Result<image::ImageHeader> header = image::read_image_header(bytes);
  if (!header.is_ok()) return header.status();
  const int width = header.value().width;
  const int height = header.value().height;
  if (width > max_size || height > max_size)
    return invalid_argument(
        fmt::format("the image is {}x{}, larger than max_size {}", width, height, max_size));
  return PlanesSize{height, width};
}

// Decodes `bytes`, of `size` (image_size_within's): its RGB rows, in this thread's buffer until
// its next decode.
inline Result<image::RgbView> decode_of_size(ByteSpan bytes, PlanesSize size) {
  thread_local image::DecodeBuffer buffer;
  Result<image::DecodedCrop> decoded = image::decode_rgb(bytes, {}, buffer);
  if (!decoded.is_ok()) return decoded.status();
  const image::RgbView& rgb = decoded.value().pixels;
  if (rgb.width != size.width || rgb.height != size.height)
    return corrupt(fmt::format("the header says {}x{} but the image is {}x{}", size.width,
                               size.height, rgb.width, rgb.height));
  return rgb;
}

// Decodes `bytes`, of `size` (image_size_within's), into planes [3, H, W] at `planes`.
inline Status decode_planes(ByteSpan bytes, PlanesSize size, uint8_t* planes) {
  Result<image::RgbView> decoded = decode_of_size(bytes, size);
  if (!decoded.is_ok()) return decoded.status();
  const image::RgbView& rgb = decoded.value();
  const size_t plane = static_cast<size_t>(size.width) * size.height;
  for (int y = 0; y < size.height; ++y) {
    const uint8_t* row = rgb.row(y);
    uint8_t* out = planes + static_cast<size_t>(y) * size.width;
    for (int x = 0; x < size.width; ++x) {
      out[x] = row[3 * x];
      out[plane + x] = row[3 * x + 1];
      out[2 * plane + x] = row[3 * x + 2];
    }
  }
  return Status::ok();
}

}  // namespace stoker
