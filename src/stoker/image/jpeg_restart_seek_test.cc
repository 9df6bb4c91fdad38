#include "stoker/image/jpeg_restart_seek.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "stoker/image/image_fixtures.h"
#include "stoker/image/jpeg_decompressor.h"
#include "stoker/image/jpeg_transcode.h"
#include "stoker/image/test_images.h"

namespace stoker::image::test {
namespace {

using testing::encode_jpeg;
using testing::JpegSpec;

ByteSpan span(const std::vector<uint8_t>& bytes) { return {bytes.data(), bytes.size()}; }

// 96 x 200, 4:2:0: MCU rows of 16 px, 13 of them.
std::vector<uint8_t> jpeg_with(bool restarts, bool progressive = false) {
  JpegSpec spec;
  spec.width = 96;
  spec.height = 200;
  spec.restart_rows = restarts ? 1 : 0;
  spec.progressive = progressive;
  return encode_jpeg(spec);
}

std::optional<RestartSeek> seek(const std::vector<uint8_t>& bytes, int scale, JDIMENSION row0,
                                JDIMENSION row1, DecodeBuffer& buffer) {
  JpegDecompressor jpeg;
  EXPECT_TRUE(jpeg.read_header(span(bytes), kDefaultMaxPixels).is_ok());
  return seek_restart_interval(jpeg.cinfo(), span(bytes), scale, row0, row1, buffer);
}

TEST(JpegRestartSeekTest, StartsAtTheMcuRowAboveTheFirstRowAndCutsTwoRowsBelowTheLast) {
  const std::vector<uint8_t> jpeg = jpeg_with(true);
  DecodeBuffer buffer;
  // Rows 100..120: row 99 is in MCU row 6 (96..111); the last, 120, in row 7; keep 8 and 9.
  std::optional<RestartSeek> s = seek(jpeg, 8, 100, 121, buffer);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->first_row, 96u);
  EXPECT_LT(s->stream.size, jpeg.size());
  Result<ImageHeader> h = read_image_header(s->stream);
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  EXPECT_EQ(h.value().height, 200 - 96);
  EXPECT_EQ(h.value().width, 96);
  EXPECT_EQ(s->stream.data[s->stream.size - 2], 0xFF);
  EXPECT_EQ(s->stream.data[s->stream.size - 1], 0xD9);  // EOI after MCU row 9
  // Its restart markers count from RST0 again: four intervals kept, three markers between.
  std::vector<uint8_t> markers;
  const std::vector<uint8_t> stream(s->stream.data, s->stream.data + s->stream.size);
  for (size_t i = testing::find_jpeg_marker(stream, 0xDA); i + 1 < stream.size(); ++i) {
    if (stream[i] == 0xFF && stream[i + 1] >= 0xD0 && stream[i + 1] <= 0xD7) {
      markers.push_back(stream[i + 1]);
    }
  }
  EXPECT_EQ(markers, (std::vector<uint8_t>{0xD0, 0xD1, 0xD2}));

  // At half scale MCU rows are 8 output rows: rows 50..60 start at MCU row 6 (output row 48).
  s = seek(jpeg, 4, 50, 61, buffer);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->first_row, 48u);
  // Near the bottom the stream runs to the original's end.
  s = seek(jpeg, 8, 180, 200, buffer);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->first_row, 176u);
  // (the last MCU row's data, which no marker follows, and EOI).
  EXPECT_TRUE(std::equal(jpeg.end() - 16, jpeg.end(), s->stream.data + s->stream.size - 16));
}

TEST(JpegRestartSeekTest, NothingWhereRestartMarkersDoNotHelp) {
  DecodeBuffer buffer;
  EXPECT_FALSE(seek(jpeg_with(false), 8, 100, 120, buffer).has_value());
  EXPECT_FALSE(seek(jpeg_with(true, true), 8, 100, 120, buffer).has_value());  // progressive
  // Rows whose row above lies in the first MCU row.
  EXPECT_FALSE(seek(jpeg_with(true), 8, 0, 120, buffer).has_value());
  EXPECT_FALSE(seek(jpeg_with(true), 8, 16, 120, buffer).has_value());
  EXPECT_TRUE(seek(jpeg_with(true), 8, 17, 120, buffer).has_value());
  // A restart interval that is not a whole number of MCU rows (6 MCUs per row here).
  JpegSpec spec;
  spec.width = 96;
  spec.height = 200;
  std::vector<uint8_t> odd = encode_jpeg(spec);
  Result<std::vector<uint8_t>> t = transcode_jpeg_for_crops(span(odd));
  ASSERT_TRUE(t.is_ok());
  std::vector<uint8_t> bytes = t.value();
  const size_t dri = testing::find_jpeg_marker(bytes, 0xDD);
  ASSERT_NE(dri, SIZE_MAX);
  testing::put_u16_be(bytes, dri + 4, 4);
  EXPECT_FALSE(seek(bytes, 8, 100, 120, buffer).has_value());
  // A restart marker out of sequence before the rows.
  std::vector<uint8_t> renumbered = jpeg_with(true);
  const size_t first_rst = testing::find_jpeg_marker(renumbered, 0xD0);
  ASSERT_NE(first_rst, SIZE_MAX);
  renumbered[first_rst + 1] = 0xD3;
  EXPECT_FALSE(seek(renumbered, 8, 100, 120, buffer).has_value());
  // Truncated above the rows: the data does not hold them.
  const std::vector<uint8_t> jpeg = jpeg_with(true);
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + jpeg.size() / 3);
  EXPECT_FALSE(seek(cut, 8, 150, 160, buffer).has_value());
}

}  // namespace
}  // namespace stoker::image::test
