#include "stoker/store/import/stored_image.h"

#include <fmt/format.h>

#include "stoker/image/jpeg_transcode.h"
#include "stoker/image/png_transcode.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/util/atomic_file.h"

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

Result<ImageToStore> read_image_to_store(const std::string& path, const std::string& named,
                                         bool keep_original, int64_t max_pixels,
                                         image::DecodeBuffer& buffer, ChannelStatistics& pixels) {
  const auto bad = [&](const std::string& why) {
    return corrupt(fmt::format("{}: {}", named, why));
  };
  ImageToStore image;
  Result<std::string> file = read_file(path, kMaxImageFileBytes);
  if (!file.is_ok()) return bad(image_file_read_error(file.status(), path));
  image.file = std::move(file).value();
  Result<image::ImageHeader> header = image::read_image_header(image.file_bytes(), max_pixels);
  if (!header.is_ok()) return bad(header.status().message());
  image.header = header.value();
  Result<std::vector<uint8_t>> transcoded =
      transcode_for_storage(image.file_bytes(), image.header, keep_original, max_pixels);
  if (!transcoded.is_ok()) return bad(transcoded.status().message());
  image.transcoded = std::move(transcoded).value();
  if (Status s = add_stored_pixels(image.stored(), max_pixels, buffer, pixels); !s.is_ok())
    return bad(s.message());
  return image;
}

}  // namespace stoker
