#pragma once
// The per-format halves of decode_rgb (decode.h), and what they share.

#include <optional>

#include "stoker/image/decode.h"

namespace stoker::image {

// The crop to decode in a width x height image: `crop`, checked to be non-empty and inside the
// image (else kInvalidArgument), or the whole image.
Result<CropRect> resolve_crop(const std::optional<CropRect>& crop, int width, int height);

// decode_rgb_rows for bytes that start with a JPEG's or a PNG's magic.
Result<DecodedRows*> jpeg_rows(ByteSpan bytes, const DecodeRequest& request, DecodeBuffer& buffer);
Result<DecodedRows*> png_rows(ByteSpan bytes, const DecodeRequest& request, DecodeBuffer& buffer);

}  // namespace stoker::image
