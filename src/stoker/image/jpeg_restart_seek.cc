#include "stoker/image/jpeg_restart_seek.h"

#include <algorithm>
#include <cstring>

namespace stoker::image {
namespace {

constexpr uint8_t kRst0 = 0xD0;
constexpr uint8_t kEoi = 0xD9;

bool is_rst(uint8_t marker) { return marker >= kRst0 && marker <= kRst0 + 7; }

// The offset of the frame height (SOFn: FF Cn, length, precision, height, width) in the markers
// data[0, end), or 0 if there is none.
size_t find_frame_height(const uint8_t* data, size_t end) {
  size_t pos = 2;  // after SOI
  while (pos + 4 <= end && data[pos] == 0xFF) {
    const uint8_t marker = data[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    const bool sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) return pos + 9 <= end ? pos + 5 : 0;
    pos += 2 + (size_t{data[pos + 2]} << 8 | data[pos + 3]);
  }
  return 0;
}

// The offset of the next marker in entropy-coded data from `pos` (skipping stuffed FF 00 and
// fill bytes), or `size` if there is none.
size_t next_marker(const uint8_t* data, size_t pos, size_t size) {
  while (pos + 1 < size) {
    const auto* ff = static_cast<const uint8_t*>(std::memchr(data + pos, 0xFF, size - 1 - pos));
    if (ff == nullptr) return size;
    pos = static_cast<size_t>(ff - data);
    const uint8_t next = data[pos + 1];
    if (next != 0x00 && next != 0xFF) return pos;
    pos += next == 0x00 ? 2 : 1;
  }
  return size;
}

void put_u16(uint8_t* at, JDIMENSION value) {
  at[0] = static_cast<uint8_t>(value >> 8);
  at[1] = static_cast<uint8_t>(value);
}

// How the restart intervals tile the image: `cols` intervals of `width` pixels to a band of
// `height` pixels (the last ones cut by the image's edges), or nothing if they do not.
struct Tiling {
  JDIMENSION cols, bands;
  JDIMENSION width, height;  // in image pixels
};

std::optional<Tiling> tiling(j_decompress_ptr cinfo) {
  // MCU geometry of the one scan: one block of the component in a one-component scan, else
  // max_h x max_v blocks.
  JDIMENSION per_row, mcu_width, mcu_height;
  if (cinfo->comps_in_scan == 1) {
    const jpeg_component_info* comp = cinfo->cur_comp_info[0];
    per_row = comp->width_in_blocks;
    mcu_width = static_cast<JDIMENSION>(DCTSIZE * cinfo->max_h_samp_factor / comp->h_samp_factor);
    mcu_height = static_cast<JDIMENSION>(DCTSIZE * cinfo->max_v_samp_factor / comp->v_samp_factor);
  } else {
    mcu_width = DCTSIZE * static_cast<JDIMENSION>(cinfo->max_h_samp_factor);
    mcu_height = DCTSIZE * static_cast<JDIMENSION>(cinfo->max_v_samp_factor);
    per_row = (cinfo->image_width + mcu_width - 1) / mcu_width;
  }
  const JDIMENSION interval = cinfo->restart_interval;
  Tiling t{};
  if (interval % per_row == 0) {
    t.cols = 1;
    t.width = cinfo->image_width;
    t.height = interval / per_row * mcu_height;
  } else if (per_row % interval == 0) {
    t.cols = per_row / interval;
    t.width = interval * mcu_width;
    t.height = mcu_height;
  } else {
    return std::nullopt;
  }
  t.bands = (cinfo->image_height + t.height - 1) / t.height;
  return t;
}

}  // namespace

std::optional<RestartWindow> seek_restart_window(j_decompress_ptr cinfo, ByteSpan bytes,
                                                 int scale_num, JDIMENSION col0, JDIMENSION col1,
                                                 JDIMENSION row0, JDIMENSION row1,
                                                 DecodeBuffer& buffer) {
  if (cinfo->restart_interval == 0 || jpeg_has_multiple_scans(cinfo)) return std::nullopt;
  const std::optional<Tiling> t = tiling(cinfo);
  if (!t) return std::nullopt;
  const JDIMENSION out_width = t->width * static_cast<JDIMENSION>(scale_num) / 8;
  const JDIMENSION out_height = t->height * static_cast<JDIMENSION>(scale_num) / 8;
  // An interval narrower than a scaled pixel (the fuzzer's): decode the original.
  if (out_width == 0 || out_height == 0) return std::nullopt;
  // The window, in intervals: bands b0..b1, columns c0..c1.
  const JDIMENSION b0 = row0 > 0 ? (row0 - 1) / out_height : 0;
  const JDIMENSION b1 = std::min(t->bands - 1, row1 / out_height + 2);
  const JDIMENSION c0 = t->cols > 1 && col0 > 0 ? (col0 - 1) / out_width : 0;
  const JDIMENSION c1 = std::min(t->cols - 1, col1 / out_width);
  // Above, the original's decode reads down to the crop and stops as soon: nothing to gain.
  if (b0 == 0 && c0 == 0 && c1 == t->cols - 1) return std::nullopt;
  // A window of 2 * max_h_samp_factor output pixels or fewer (a narrow last interval, or one
  // interval of an MCU at 1/4) can leave a component 2 samples wide or fewer: libjpeg would
  // upsample it plainly, as a narrow image's (jdsample.c upsamples fancy only wider ones), not
  // as the original's. A component is at least width * scale_num / (8 * max_h_samp_factor).
  const JDIMENSION width = std::min(cinfo->image_width, (c1 + 1) * t->width) - c0 * t->width;
  if (width * static_cast<JDIMENSION>(scale_num) <=
      16 * static_cast<JDIMENSION>(cinfo->max_h_samp_factor)) {
    return std::nullopt;
  }

  const uint8_t* data = bytes.data;
  const size_t header_end = static_cast<size_t>(cinfo->src->next_input_byte - data);
  const size_t height_at = find_frame_height(data, header_end);
  if (height_at == 0) return std::nullopt;
  // The window's data is no longer than the original's: a restart marker written for each
  // one passed, at most an EOI more.
  uint8_t* out = buffer.area(DecodeBuffer::kStream, bytes.size + 2);
  std::memcpy(out, data, header_end);
  put_u16(out + height_at, std::min(cinfo->image_height, (b1 + 1) * t->height) - b0 * t->height);
  put_u16(out + height_at + 2, width);
  uint8_t* tail = out + header_end;

  // Walk the intervals: the data from `pos` to the next marker is interval `index`'s.
  const JDIMENSION last = t->bands * t->cols - 1;  // the image's last interval
  const JDIMENSION window_end = b1 * t->cols + c1;
  int written = 0;  // intervals copied
  size_t pos = header_end;
  for (JDIMENSION index = 0;; ++index) {
    const size_t marker = next_marker(data, pos, bytes.size);
    const JDIMENSION band = index / t->cols, col = index % t->cols;
    const bool wanted = band >= b0 && col >= c0 && col <= c1;
    const bool rst = marker < bytes.size && is_rst(data[marker + 1]);
    if (!rst) {
      // The image's data ends here: right, if this is its last interval.
      if (index != last || !wanted) return std::nullopt;
      if (written > 0) {
        tail[0] = 0xFF;
        tail[1] = static_cast<uint8_t>(kRst0 + ((written - 1) & 7));
        tail += 2;
      }
      // The rest as it is (EOI, or nothing if the data is cut short: decoding reports it).
      std::memcpy(tail, data + pos, bytes.size - pos);
      tail += bytes.size - pos;
      break;
    }
    if (data[marker + 1] != kRst0 + (index & 7)) return std::nullopt;  // out of sequence
    if (wanted) {
      if (written > 0) {
        tail[0] = 0xFF;
        tail[1] = static_cast<uint8_t>(kRst0 + ((written - 1) & 7));
        tail += 2;
      }
      std::memcpy(tail, data + pos, marker - pos);
      tail += marker - pos;
      ++written;
    }
    pos = marker + 2;
    if (index == window_end) {
      tail[0] = 0xFF;
      tail[1] = kEoi;
      tail += 2;
      break;
    }
  }
  return RestartWindow{{out, static_cast<size_t>(tail - out)}, b0 * out_height, c0 * out_width};
}

}  // namespace stoker::image
