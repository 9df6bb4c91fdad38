#pragma once
// What an importer stores of an image file, shared by the importers that keep images as they
// come (ImageFolder, COCO): a JPEG transcoded for crops or a PNG re-encoded for a faster decode
// (both lossless: the same pixels), or the file as it is; and the check that the stored image
// decodes whole, which also gives its pixels to the dataset's statistics. Pure functions:
// thread-safe, each caller passing its own DecodeBuffer.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/image/image_header.h"
#include "stoker/store/channel_statistics.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

// The bytes to store for the image `file` (whose header is `header`): its transcode for crops
// (image/jpeg_transcode.h, image/png_transcode.h), or empty to store the file as it is: with
// `keep_original`, or an image the transcode cannot copy with the same pixels or would make
// larger. Errors: a corrupt or truncated image (one line).
Result<std::vector<uint8_t>> transcode_for_storage(ByteSpan file, const image::ImageHeader& header,
                                                   bool keep_original, int64_t max_pixels);

// Decodes the whole stored image, as PIL's convert("RGB") would, and adds its pixels to
// `pixels`: this reads all of its data, so a truncated or corrupt image is an error here.
Status add_stored_pixels(ByteSpan stored, int64_t max_pixels, image::DecodeBuffer& buffer,
                         ChannelStatistics& pixels);

// An image file read and made ready to store: its bytes, header and what to store of it.
struct ImageToStore {
  std::string file;
  image::ImageHeader header;
  std::vector<uint8_t> transcoded;  // empty: the file is stored as it is

  ByteSpan file_bytes() const {
    return {reinterpret_cast<const uint8_t*>(file.data()), file.size()};
  }
  ByteSpan stored() const {
    return transcoded.empty() ? file_bytes() : ByteSpan{transcoded.data(), transcoded.size()};
  }
};

// Reads the image at `path` (at most kMaxImageFileBytes), transcodes it (transcode_for_storage)
// and checks it whole (add_stored_pixels into `pixels`). Errors: one line, `named` (the file as
// the caller names it) then why.
Result<ImageToStore> read_image_to_store(const std::string& path, const std::string& named,
                                         bool keep_original, int64_t max_pixels,
                                         image::DecodeBuffer& buffer, ChannelStatistics& pixels);

}  // namespace stoker
