#include "stoker/store/import/stored_image.h"

#include "stoker/image/jpeg_transcode.h"
#include "stoker/image/png_transcode.h"

namespace stoker {

Result<std::vector<uint8_t>> transcode_for_storage(ByteSpan file, const image::ImageHeader& header,
                                                   bool keep_original, int64_t max_pixels) {
  if (keep_original) return std::vector<uint8_t>();
  Result<std::vector<uint8_t>> result = header.format == image::ImageFormat::kJpeg
                                            ? image::transcode_jpeg_for_crops(file, max_pixels)
                                            : image::transcode_png_for_crops(file, max_pixels);
  // kUnsupported here, after the header passed, is an image the transcode leaves as it is (a
  // progressive JPEG whose scans leave bits unsent; a gray, palette or 16-bit PNG, or one whose
  // transcode would be larger): stored as it is.
  if (result.status().code() == StatusCode::kUnsupported) return std::vector<uint8_t>();
  return result;
}

Status add_stored_pixels(ByteSpan stored, int64_t max_pixels, image::DecodeBuffer& buffer,
                         ChannelStatistics& pixels) {
  image::DecodeRequest request;
  request.max_pixels = max_pixels;
  STOKER_ASSIGN_OR_RETURN(const image::DecodedCrop decoded,
                          image::decode_rgb(stored, request, buffer));
  const image::RgbView& rgb = decoded.pixels;
  pixels.add_interleaved(rgb.data, rgb.width, rgb.height, rgb.stride);
  return Status::ok();
}

}  // namespace stoker
