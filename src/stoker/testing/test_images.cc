#include "stoker/testing/test_images.h"

#include <spng.h>
#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "stoker/image/jpeg_errors.h"

namespace stoker::image::testing {
namespace {

struct Compress {
  jpeg_compress_struct* cinfo;
  const JpegSpec* spec;
  const std::vector<uint8_t>* pixels;
  unsigned char** out;
  unsigned long* out_size;
};

void compress(void* p) {
  const auto* c = static_cast<Compress*>(p);
  jpeg_compress_struct* cinfo = c->cinfo;
  const JpegSpec& spec = *c->spec;
  jpeg_create_compress(cinfo);
  jpeg_mem_dest(cinfo, c->out, c->out_size);
  cinfo->image_width = static_cast<JDIMENSION>(spec.width);
  cinfo->image_height = static_cast<JDIMENSION>(spec.height);
  cinfo->input_components = spec.components;
  cinfo->in_color_space =
      spec.components == 1 ? JCS_GRAYSCALE : (spec.components == 3 ? JCS_RGB : JCS_CMYK);
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, spec.quality, TRUE);
  if (spec.components == 3) {
    cinfo->comp_info[0].h_samp_factor = spec.h_sampling;
    cinfo->comp_info[0].v_samp_factor = spec.v_sampling;
  }
  if (spec.ycck) jpeg_set_colorspace(cinfo, JCS_YCCK);
  cinfo->write_Adobe_marker = spec.adobe_marker ? cinfo->write_Adobe_marker : FALSE;
  if (spec.progressive) jpeg_simple_progression(cinfo);
  // DC of all components, then each component's AC to all but its last bit.
  static const jpeg_scan_info kPartial[] = {
      {3, {0, 1, 2, 0}, 0, 0, 0, 0},
      {1, {0, 0, 0, 0}, 1, 63, 0, 1},
      {1, {1, 0, 0, 0}, 1, 63, 0, 1},
      {1, {2, 0, 0, 0}, 1, 63, 0, 1},
  };
  if (spec.partial_scans) {
    cinfo->scan_info = kPartial;
    cinfo->num_scans = 4;
  }
  cinfo->arith_code = spec.arithmetic ? TRUE : FALSE;
  cinfo->restart_in_rows = spec.restart_rows;
  cinfo->restart_interval = static_cast<unsigned int>(spec.restart_mcus);
  jpeg_start_compress(cinfo, TRUE);
  const int stride = spec.width * spec.components;
  while (cinfo->next_scanline < cinfo->image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(c->pixels->data() + cinfo->next_scanline * stride);
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
}

}  // namespace

std::vector<uint8_t> pattern_pixels(int width, int height, int components) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * components);
  uint32_t noise = 12345;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < components; ++c) {
        noise = noise * 1664525u + 1013904223u;
        const int smooth = (x * 255 / (width > 1 ? width - 1 : 1) * (c + 1) +
                            y * 255 / (height > 1 ? height - 1 : 1) * (3 - c % 3)) /
                           4;
        pixels[(static_cast<size_t>(y) * width + x) * components + c] =
            static_cast<uint8_t>((smooth + static_cast<int>(noise >> 28)) & 0xFF);
      }
    }
  }
  return pixels;
}

std::vector<uint8_t> encode_jpeg(const JpegSpec& spec) {
  const std::vector<uint8_t> pixels = pattern_pixels(spec.width, spec.height, spec.components);
  jpeg_compress_struct cinfo;
  JpegErrors errors;
  init_jpeg_errors(&errors, reinterpret_cast<j_common_ptr>(&cinfo));
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  Compress c{&cinfo, &spec, &pixels, &out, &out_size};
  const bool ok = jpeg_call(&errors, compress, &c);
  jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> bytes;
  if (ok) bytes.assign(out, out + out_size);
  free(out);
  if (!ok) throw std::runtime_error(std::string("encode_jpeg: libjpeg: ") + errors.message);
  return bytes;
}

std::vector<uint8_t> encode_png(const PngSpec& spec) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(spec.width);
  ihdr.height = static_cast<uint32_t>(spec.height);
  ihdr.bit_depth = static_cast<uint8_t>(spec.bit_depth);
  ihdr.color_type = static_cast<uint8_t>(spec.color_type);
  ihdr.interlace_method = spec.interlaced ? 1 : 0;
  int err = spng_set_ihdr(ctx, &ihdr);
  const int channels = spec.color_type == 0 || spec.color_type == 3
                           ? 1
                           : (spec.color_type == 4 ? 2 : (spec.color_type == 2 ? 3 : 4));
  const int sample_bytes = spec.bit_depth == 16 ? 2 : 1;
  std::vector<uint8_t> image = pattern_pixels(spec.width, spec.height, channels * sample_bytes);
  if (spec.color_type == 3) {
    spng_plte plte{};
    plte.n_entries = spec.bit_depth < 4 ? 1u << spec.bit_depth : 16u;
    for (uint32_t i = 0; i < plte.n_entries; ++i) {
      plte.entries[i] = {static_cast<uint8_t>(i * 16), static_cast<uint8_t>(255 - i * 9),
                         static_cast<uint8_t>(i * i), 255};
    }
    if (err == 0) err = spng_set_plte(ctx, &plte);
    for (uint8_t& v : image) v = static_cast<uint8_t>(v % plte.n_entries);
  }
  if (spec.bit_depth < 8) {
    // Pack the low bits of each sample, most significant first, rows padded to a byte.
    const int per_byte = 8 / spec.bit_depth;
    const int row_bytes = (spec.width + per_byte - 1) / per_byte;
    std::vector<uint8_t> packed(static_cast<size_t>(row_bytes) * spec.height, 0);
    for (int y = 0; y < spec.height; ++y) {
      for (int x = 0; x < spec.width; ++x) {
        const int v = image[static_cast<size_t>(y) * spec.width + x] & ((1 << spec.bit_depth) - 1);
        const int shift = 8 - spec.bit_depth * (x % per_byte + 1);
        packed[static_cast<size_t>(y) * row_bytes + x / per_byte] |=
            static_cast<uint8_t>(v << shift);
      }
    }
    image = std::move(packed);
  }
  if (err == 0) {
    err = spng_encode_image(ctx, image.data(), image.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  }
  std::vector<uint8_t> bytes;
  if (err == 0) {
    size_t size = 0;
    void* data = spng_get_png_buffer(ctx, &size, &err);
    if (data) {
      bytes.assign(static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
      free(data);
    }
  }
  spng_ctx_free(ctx);
  return bytes;
}

void put_u16_be(std::vector<uint8_t>& bytes, size_t at, uint16_t value) {
  bytes[at] = static_cast<uint8_t>(value >> 8);
  bytes[at + 1] = static_cast<uint8_t>(value);
}

void put_u32_be(std::vector<uint8_t>& bytes, size_t at, uint32_t value) {
  put_u16_be(bytes, at, static_cast<uint16_t>(value >> 16));
  put_u16_be(bytes, at + 2, static_cast<uint16_t>(value));
}

void fix_png_crc(std::vector<uint8_t>& bytes, size_t chunk_at) {
  const uint32_t length = uint32_t{bytes[chunk_at]} << 24 | uint32_t{bytes[chunk_at + 1]} << 16 |
                          uint32_t{bytes[chunk_at + 2]} << 8 | bytes[chunk_at + 3];
  const uLong crc = crc32(0, bytes.data() + chunk_at + 4, length + 4);
  put_u32_be(bytes, chunk_at + 8 + length, static_cast<uint32_t>(crc));
}

size_t find_jpeg_marker(const std::vector<uint8_t>& bytes, uint8_t marker) {
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == marker) return i;
  }
  return SIZE_MAX;
}

}  // namespace stoker::image::testing
