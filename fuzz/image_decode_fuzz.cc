// libFuzzer target for the image layer (docs/FUZZING.md): the input is an encoded image (JPEG or
// PNG by its magic). The target reads its header, decodes a crop chosen by the input's last
// bytes (sometimes DCT-scaled), streams the same crop's rows into the resampler as the loader
// does (decode_rgb_rows), decodes it whole, and transcodes it (JPEG or PNG), decoding the
// transcode whole and cropped. It traps if an error is not a one-line kCorrupt or kUnsupported,
// if a decoded view is not the size promised or its box not inside it, if the streamed resample
// does not fail as the crop's decode does (the same error) or writes other bytes than the
// resample of the decoded crop, if an image that decodes whole fails to decode cropped, if a
// crop at 8/8 differs from the same rectangle of the full decode, or if a transcode fails to
// decode or decodes to other pixels than the original, or if the EXIF orientation
// (exif_orientation.h, read before the header: any bytes) is not -1 to 8. The pixel cap is 1 Mpx,
// so that executions stay fast.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/image/exif_orientation.h"
#include "stoker/image/image_header.h"
#include "stoker/image/jpeg_transcode.h"
#include "stoker/image/png_transcode.h"
#include "stoker/image/resample.h"

namespace stoker::image {
namespace {

constexpr int64_t kFuzzMaxPixels = int64_t{1} << 20;

// Where touch()'s sums go, so that the reads are not optimised away.
volatile uint64_t pixel_sum = 0;

void require(bool condition) {
  if (!condition) __builtin_trap();
}

// `s` is ok, or kCorrupt / kUnsupported with a non-empty one-line message.
void require_clean(const Status& s) {
  require(s.is_ok() ||
          ((s.code() == StatusCode::kCorrupt || s.code() == StatusCode::kUnsupported) &&
           !s.message().empty() && s.message().find('\n') == std::string::npos));
}

// The request the input's last 9 bytes choose: a crop inside the width x height image and a
// minimum size (none, or about 1/2, 1/4 or 3/8 of the crop: each DCT scale gets its turn).
DecodeRequest request_from(const uint8_t* data, size_t size, int width, int height) {
  uint8_t k[9] = {};
  const size_t n = size < sizeof(k) ? size : sizeof(k);
  std::memcpy(k + sizeof(k) - n, data + size - n, n);
  auto u16 = [&](int i) { return int{k[i]} | int{k[i + 1]} << 8; };
  CropRect c;
  c.x = u16(0) % width;
  c.y = u16(2) % height;
  c.width = 1 + u16(4) % (width - c.x);
  c.height = 1 + u16(6) % (height - c.y);
  DecodeRequest request;
  request.crop = c;
  request.max_pixels = kFuzzMaxPixels;
  const int eighths[] = {0, 4, 2, 3};
  request.min_width = c.width * eighths[k[8] & 3] / 8;
  request.min_height = c.height * eighths[k[8] & 3] / 8;
  return request;
}

// Reads every pixel byte (so that a view outside its buffer faults under ASan); returns a sum.
uint64_t touch(const RgbView& v) {
  require(v.width > 0 && v.height > 0 && v.stride >= 3 * v.width);
  uint64_t sum = 0;
  for (int y = 0; y < v.height; ++y) {
    for (int i = 0; i < 3 * v.width; ++i) sum += v.row(y)[i];
  }
  return sum;
}

std::vector<uint8_t> packed(const RgbView& v) {
  std::vector<uint8_t> out;
  for (int y = 0; y < v.height; ++y) out.insert(out.end(), v.row(y), v.row(y) + 3 * v.width);
  return out;
}

// The checks on a decoded crop of `request`.
void check_crop(const DecodedCrop& d, const DecodeRequest& request, ImageFormat format) {
  const CropRect& c = *request.crop;
  require(d.scale_num == 8 ||
          (format == ImageFormat::kJpeg && (d.scale_num == 4 || d.scale_num == 2)));
  if (d.scale_num == 8) {
    require(d.pixels.width == c.width && d.pixels.height == c.height);
    require(d.box.x0 == 0 && d.box.y0 == 0 && d.box.x1 == c.width && d.box.y1 == c.height);
  } else {
    require(d.box.x0 >= 0 && d.box.y0 >= 0 && d.box.x1 <= d.pixels.width &&
            d.box.y1 <= d.pixels.height);
    require(d.box.x1 - d.box.x0 >= request.min_width && d.box.y1 - d.box.y0 >= request.min_height);
  }
  pixel_sum += touch(d.pixels);
}

// The crop's rectangle of a full decode.
std::vector<uint8_t> rectangle(const RgbView& full, const CropRect& c) {
  std::vector<uint8_t> out;
  for (int y = c.y; y < c.y + c.height; ++y) {
    out.insert(out.end(), full.row(y) + 3 * c.x, full.row(y) + 3 * (c.x + c.width));
  }
  return out;
}

// The crop of `request` streamed into a resize to a small sample: it fails as the decode of the
// crop `crop` did, with the same error, or writes the bytes of the resize of its pixels.
void check_streamed(ByteSpan bytes, const DecodeRequest& request, const Result<DecodedCrop>& crop,
                    uint8_t shape) {
  static DecodeBuffer buffer;
  static Resampler resampler;
  ResampleOutput out;
  out.width = 1 + (shape & 31);
  out.height = 1 + (shape >> 3 & 31);
  out.flip_horizontal = shape & 1;
  out.type = shape & 2 ? ResampleOutput::Type::kUint8 : ResampleOutput::Type::kFloat32;
  const size_t n = size_t{3} * out.width * out.height * 4;
  std::vector<uint8_t> streamed(n), materialised(n);
  Result<DecodedRows*> rows = decode_rgb_rows(bytes, request, buffer);
  Status s = rows.status();
  if (rows.is_ok()) s = resampler.resample(*rows.value(), rows.value()->box, out, streamed.data());
  require(s.is_ok() == crop.is_ok());
  if (!crop.is_ok()) {
    require(s.code() == crop.status().code() && s.message() == crop.status().message());
    return;
  }
  require(
      resampler.resample(crop.value().pixels, crop.value().box, out, materialised.data()).is_ok());
  require(streamed == materialised);
}

// A PNG's transcode: a clean error, or, when the PNG decodes whole, a plain RGB PNG that decodes
// to its pixels, whole and cropped.
void check_png_transcode(ByteSpan bytes, const DecodeRequest& request,
                         const Result<DecodedCrop>& crop, const Result<DecodedCrop>& full) {
  static DecodeBuffer buffer;
  Result<std::vector<uint8_t>> transcoded = transcode_png_for_crops(bytes, kFuzzMaxPixels);
  require_clean(transcoded.status());
  if (!transcoded.is_ok()) return;
  require(full.is_ok());
  const ByteSpan t{transcoded.value().data(), transcoded.value().size()};
  DecodeRequest whole;
  whole.max_pixels = kFuzzMaxPixels;
  Result<DecodedCrop> t_full = decode_rgb(t, whole, buffer);
  require(t_full.is_ok() && packed(t_full.value().pixels) == packed(full.value().pixels));
  Result<DecodedCrop> t_crop = decode_rgb(t, request, buffer);
  require(t_crop.is_ok() && crop.is_ok() &&
          packed(t_crop.value().pixels) == packed(crop.value().pixels));
}

void fuzz(const uint8_t* data, size_t size) {
  const ByteSpan bytes{data, size};
  const int orientation = exif_orientation(bytes);
  require(orientation >= -1 && orientation <= 8);
  Result<ImageHeader> header = read_image_header(bytes, kFuzzMaxPixels);
  require_clean(header.status());
  if (!header.is_ok()) return;
  const ImageHeader& h = header.value();
  require(h.width > 0 && h.height > 0 && h.pixels() <= kFuzzMaxPixels);

  static DecodeBuffer crop_buffer, full_buffer, transcode_buffer;
  const DecodeRequest request = request_from(data, size, h.width, h.height);
  Result<DecodedCrop> crop = decode_rgb(bytes, request, crop_buffer);
  require_clean(crop.status());
  if (crop.is_ok()) check_crop(crop.value(), request, h.format);
  check_streamed(bytes, request, crop, size > 9 ? data[size - 10] : 0);

  DecodeRequest whole;
  whole.max_pixels = kFuzzMaxPixels;
  Result<DecodedCrop> full = decode_rgb(bytes, whole, full_buffer);
  require_clean(full.status());
  if (full.is_ok()) {
    // What decodes whole decodes cropped, at any scale.
    require(crop.is_ok());
    require(full.value().pixels.width == h.width && full.value().pixels.height == h.height);
    if (crop.is_ok() && crop.value().scale_num == 8) {
      require(packed(crop.value().pixels) == rectangle(full.value().pixels, *request.crop));
    }
  }
  if (h.format != ImageFormat::kJpeg) {
    check_png_transcode(bytes, request, crop, full);
    return;
  }

  Result<std::vector<uint8_t>> transcoded = transcode_jpeg_for_crops(bytes, kFuzzMaxPixels);
  require_clean(transcoded.status());
  if (!transcoded.is_ok()) return;
  const ByteSpan t{transcoded.value().data(), transcoded.value().size()};
  Result<ImageHeader> th = read_image_header(t, kFuzzMaxPixels);
  require(th.is_ok() && th.value().width == h.width && th.value().height == h.height &&
          !th.value().progressive);
  // The transcode decodes, to the original's pixels.
  Result<DecodedCrop> t_full = decode_rgb(t, whole, transcode_buffer);
  require(t_full.is_ok());
  if (full.is_ok()) require(packed(t_full.value().pixels) == packed(full.value().pixels));
  Result<DecodedCrop> t_crop = decode_rgb(t, request, transcode_buffer);
  require(t_crop.is_ok());
  check_crop(t_crop.value(), request, h.format);
  if (crop.is_ok()) require(packed(t_crop.value().pixels) == packed(crop.value().pixels));
}

}  // namespace
}  // namespace stoker::image

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stoker::image::fuzz(data, size);
  return 0;
}
