#include "stoker/image/jpeg_restart_seek.h"

#include <algorithm>
#include <cstring>

namespace stoker::image {
namespace {

constexpr uint8_t kRst0 = 0xD0;
constexpr uint8_t kEoi = 0xD9;

bool is_rst(uint8_t marker) { return marker >= kRst0 && marker <= kRst0 + 7; }

// The offset of the frame height (SOFn: FF Cn, length, precision, height) in the markers
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
    if (sof) return pos + 7 <= end ? pos + 5 : 0;
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

// Copies data[begin, end) to `out`, the restart markers renumbered from RST0; returns the end
// of what it wrote.
uint8_t* copy_renumbered(const uint8_t* data, size_t begin, size_t end, uint8_t* out) {
  int restarts = 0;
  size_t pos = begin;
  while (pos < end) {
    const size_t marker = std::min(next_marker(data, pos, end), end);
    std::memcpy(out, data + pos, marker - pos);
    out += marker - pos;
    if (marker == end) break;
    out[0] = 0xFF;
    out[1] = is_rst(data[marker + 1]) ? static_cast<uint8_t>(kRst0 + (restarts++ & 7))
                                      : data[marker + 1];
    out += 2;
    pos = marker + 2;
  }
  return out;
}

}  // namespace

std::optional<RestartSeek> seek_restart_interval(j_decompress_ptr cinfo, ByteSpan bytes,
                                                 int scale_num, JDIMENSION row0, JDIMENSION row1,
                                                 DecodeBuffer& buffer) {
  if (row0 == 0 || cinfo->restart_interval == 0 || jpeg_has_multiple_scans(cinfo)) {
    return std::nullopt;
  }
  // MCU geometry of the one scan: one block of the component in a one-component scan, else
  // max_h x max_v blocks.
  JDIMENSION mcus_per_row, mcu_rows;  // MCUs per MCU row; image rows per MCU row
  if (cinfo->comps_in_scan == 1) {
    const jpeg_component_info* comp = cinfo->cur_comp_info[0];
    mcus_per_row = comp->width_in_blocks;
    mcu_rows = static_cast<JDIMENSION>(DCTSIZE * cinfo->max_v_samp_factor / comp->v_samp_factor);
  } else {
    const JDIMENSION mcu_width = DCTSIZE * static_cast<JDIMENSION>(cinfo->max_h_samp_factor);
    mcus_per_row = (cinfo->image_width + mcu_width - 1) / mcu_width;
    mcu_rows = DCTSIZE * static_cast<JDIMENSION>(cinfo->max_v_samp_factor);
  }
  if (cinfo->restart_interval % mcus_per_row != 0) return std::nullopt;
  const JDIMENSION interval_rows = cinfo->restart_interval / mcus_per_row * mcu_rows;
  const JDIMENSION out_interval_rows = interval_rows * static_cast<JDIMENSION>(scale_num) / 8;
  const JDIMENSION first = (row0 - 1) / out_interval_rows;  // the interval to start with
  if (first == 0) return std::nullopt;
  const JDIMENSION last = row1 / out_interval_rows + 2;  // the last interval to keep

  // Interval i (from 0) is followed by the (i + 1)-th restart marker.
  const uint8_t* data = bytes.data;
  const size_t header_end = static_cast<size_t>(cinfo->src->next_input_byte - data);
  const size_t height_at = find_frame_height(data, header_end);
  if (height_at == 0) return std::nullopt;
  size_t begin = 0, end = bytes.size;
  JDIMENSION restarts = 0;
  for (size_t pos = header_end;;) {
    const size_t marker = next_marker(data, pos, bytes.size);
    if (marker == bytes.size || !is_rst(data[marker + 1])) break;
    // Out of sequence: libjpeg decoding from the top resynchronises in ways a decode from this
    // marker would not reproduce.
    if (data[marker + 1] != kRst0 + (restarts & 7)) return std::nullopt;
    ++restarts;
    if (restarts == first) begin = marker + 2;
    if (restarts == last + 1) {
      end = marker;
      break;
    }
    pos = marker + 2;
  }
  if (begin == 0) return std::nullopt;

  uint8_t* out = buffer.area(DecodeBuffer::kStream, header_end + (end - begin) + 2);
  std::memcpy(out, data, header_end);
  const JDIMENSION height = cinfo->image_height - first * interval_rows;
  out[height_at] = static_cast<uint8_t>(height >> 8);
  out[height_at + 1] = static_cast<uint8_t>(height);
  uint8_t* tail = copy_renumbered(data, begin, end, out + header_end);
  if (end < bytes.size) {  // cut at a restart marker: end the image there
    tail[0] = 0xFF;
    tail[1] = kEoi;
    tail += 2;
  }
  return RestartSeek{{out, static_cast<size_t>(tail - out)}, first * out_interval_rows};
}

}  // namespace stoker::image
