#include "stoker/image/jpeg_restart_seek.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "stoker/image/jpeg_decompressor.h"
#include "stoker/image/jpeg_transcode.h"
#include "stoker/testing/image_fixtures.h"
#include "stoker/testing/test_images.h"

namespace stoker::image::test {
namespace {

using testing::encode_jpeg;
using testing::JpegSpec;
using testing::span;

// `width` x 200, 4:2:0: MCUs of 16 x 16 px, 13 rows (96 px: 6 to a row); a restart marker every
// `restart_mcus` MCUs (6 at 96 px: every MCU row; 0: none).
std::vector<uint8_t> jpeg_with(int restart_mcus, bool progressive = false, int width = 96) {
  JpegSpec spec;
  spec.width = width;
  spec.height = 200;
  spec.restart_mcus = restart_mcus;
  spec.progressive = progressive;
  return encode_jpeg(spec);
}

std::optional<RestartWindow> seek(const std::vector<uint8_t>& bytes, int scale, JDIMENSION col0,
                                  JDIMENSION col1, JDIMENSION row0, JDIMENSION row1,
                                  DecodeBuffer& buffer) {
  JpegDecompressor jpeg;
  EXPECT_TRUE(jpeg.read_header(span(bytes), kDefaultMaxPixels).is_ok());
  return seek_restart_window(jpeg.cinfo(), span(bytes), scale, col0, col1, row0, row1, buffer);
}

// The restart markers of a stream's entropy-coded data, in order.
std::vector<uint8_t> restart_markers(const RestartWindow& w) {
  const std::vector<uint8_t> stream(w.stream.data, w.stream.data + w.stream.size);
  std::vector<uint8_t> markers;
  for (size_t i = testing::find_jpeg_marker(stream, 0xDA); i + 1 < stream.size(); ++i) {
    if (stream[i] == 0xFF && stream[i + 1] >= 0xD0 && stream[i + 1] <= 0xD7) {
      markers.push_back(stream[i + 1]);
    }
  }
  return markers;
}

void expect_size(const RestartWindow& w, int width, int height) {
  Result<ImageHeader> h = read_image_header(w.stream);
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  EXPECT_EQ(h.value().width, width);
  EXPECT_EQ(h.value().height, height);
}

TEST(JpegRestartSeekTest, RowIntervalsStartAtTheMcuRowAboveAndCutTwoRowsBelow) {
  const std::vector<uint8_t> jpeg = jpeg_with(6);
  DecodeBuffer buffer;
  // Rows 100..120: row 99 is in MCU row 6 (96..111); the last, 120, in row 7; keep 8 and 9.
  std::optional<RestartWindow> w = seek(jpeg, 8, 0, 96, 100, 121, buffer);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->first_row, 96u);
  EXPECT_EQ(w->first_col, 0u);
  expect_size(*w, 96, 4 * 16);
  EXPECT_EQ(w->stream.data[w->stream.size - 2], 0xFF);
  EXPECT_EQ(w->stream.data[w->stream.size - 1], 0xD9);  // EOI after MCU row 9
  // Its restart markers count from RST0 again: four intervals kept, three markers between.
  EXPECT_EQ(restart_markers(*w), (std::vector<uint8_t>{0xD0, 0xD1, 0xD2}));

  // At half scale MCU rows are 8 output rows: rows 50..60 start at MCU row 6 (output row 48).
  w = seek(jpeg, 4, 0, 48, 50, 61, buffer);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->first_row, 48u);
  // Near the bottom the stream runs to the original's end.
  w = seek(jpeg, 8, 0, 96, 180, 200, buffer);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->first_row, 176u);
  expect_size(*w, 96, 200 - 176);
  // (the last MCU row's data, which no marker follows, and EOI).
  EXPECT_TRUE(std::equal(jpeg.end() - 16, jpeg.end(), w->stream.data + w->stream.size - 16));
}

TEST(JpegRestartSeekTest, IntervalsInsideRowsKeepOnlyTheColumnsOfTheCrop) {
  // Two MCUs to an interval: three intervals of 32 px to a row.
  const std::vector<uint8_t> jpeg = jpeg_with(2);
  DecodeBuffer buffer;
  // Columns 40..60 of rows 100..120: column 39 and 60 lie in the middle interval only.
  std::optional<RestartWindow> w = seek(jpeg, 8, 40, 60, 100, 121, buffer);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->first_row, 96u);
  EXPECT_EQ(w->first_col, 32u);
  expect_size(*w, 32, 4 * 16);
  EXPECT_EQ(restart_markers(*w), (std::vector<uint8_t>{0xD0, 0xD1, 0xD2}));
  // Column 64 is the right context of a crop ending at 64: two intervals a row.
  w = seek(jpeg, 8, 40, 64, 100, 121, buffer);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->first_col, 32u);
  expect_size(*w, 64, 4 * 16);
  EXPECT_EQ(restart_markers(*w), (std::vector<uint8_t>{0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6}));
  // From the top, where only the columns save anything; to the right edge and the bottom.
  w = seek(jpeg, 8, 70, 96, 0, 200, buffer);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->first_row, 0u);
  EXPECT_EQ(w->first_col, 64u);
  expect_size(*w, 32, 200);
  // At quarter scale an interval is 8 output columns wide.
  w = seek(jpeg, 2, 9, 15, 0, 50, buffer);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->first_col, 8u);
  expect_size(*w, 32, 200);
}

TEST(JpegRestartSeekTest, NothingWhereRestartMarkersDoNotHelp) {
  DecodeBuffer buffer;
  EXPECT_FALSE(seek(jpeg_with(0), 8, 0, 96, 100, 120, buffer).has_value());
  EXPECT_FALSE(seek(jpeg_with(6, true), 8, 0, 96, 100, 120, buffer).has_value());  // progressive
  // Rows whose row above lies in the first MCU row, all columns.
  EXPECT_FALSE(seek(jpeg_with(6), 8, 0, 96, 0, 120, buffer).has_value());
  EXPECT_FALSE(seek(jpeg_with(6), 8, 0, 96, 16, 120, buffer).has_value());
  EXPECT_TRUE(seek(jpeg_with(6), 8, 0, 96, 17, 120, buffer).has_value());
  EXPECT_FALSE(seek(jpeg_with(2), 8, 1, 95, 0, 120, buffer).has_value());
  // A restart interval that does not tile the rows (4 MCUs; 6 to a row).
  EXPECT_FALSE(seek(jpeg_with(4), 8, 40, 60, 100, 120, buffer).has_value());
  // Windows of 4 output pixels or fewer (2 * max_h_samp_factor), whose chroma libjpeg would
  // upsample as a narrow image's: the last interval of a 98 px image (2 px), from column 96 on;
  // one interval of an MCU at 1/4.
  const std::vector<uint8_t> narrow_last = jpeg_with(1, false, 98);
  EXPECT_FALSE(seek(narrow_last, 8, 97, 98, 100, 120, buffer).has_value());
  EXPECT_TRUE(seek(narrow_last, 8, 96, 98, 100, 120, buffer).has_value());  // 18 px
  EXPECT_FALSE(seek(jpeg_with(1), 2, 9, 10, 25, 30, buffer).has_value());
  EXPECT_TRUE(seek(jpeg_with(1), 2, 8, 10, 25, 30, buffer).has_value());  // two intervals
}

// An interval narrower than a scaled pixel: a 1 px wide image with a restart marker every MCU
// row (the fuzzer's fuzz/findings/image-restart-interval-narrower-than-a-scaled-pixel.jpg,
// transcoded) at 1/4 and 1/2 scale, where the interval's width came to 0 output pixels (a
// division by zero).
TEST(JpegRestartSeekTest, NothingWhereAnIntervalIsNarrowerThanAScaledPixel) {
  const std::vector<uint8_t> jpeg = jpeg_with(1, false, 1);
  DecodeBuffer buffer;
  EXPECT_FALSE(seek(jpeg, 2, 0, 1, 8, 12, buffer).has_value());
  EXPECT_FALSE(seek(jpeg, 4, 0, 1, 16, 24, buffer).has_value());
  // Decoded at 1/4, to the pixels of the whole image's decode at 1/4.
  DecodeRequest request;
  request.crop = CropRect{0, 32, 1, 32};
  request.min_height = 8;
  Result<DecodedCrop> crop = decode_rgb(span(jpeg), request, buffer);
  ASSERT_TRUE(crop.is_ok()) << crop.status().message();
  ASSERT_EQ(crop.value().scale_num, 2);
  const std::vector<uint8_t> crop_pixels = testing::packed(crop.value().pixels);
  request.crop = std::nullopt;
  request.min_height = 16;
  Result<DecodedCrop> whole = decode_rgb(span(jpeg), request, buffer);
  ASSERT_TRUE(whole.is_ok()) << whole.status().message();
  ASSERT_EQ(whole.value().scale_num, 2);
  EXPECT_EQ(crop_pixels,
            testing::rectangle(testing::packed(whole.value().pixels), 1, {0, 8, 1, 8}));
}

TEST(JpegRestartSeekTest, NothingWhereTheMarkersAreOutOfSequenceOrTheDataEndsShort) {
  DecodeBuffer buffer;
  const std::vector<uint8_t> jpeg = jpeg_with(2);
  ASSERT_TRUE(seek(jpeg, 8, 40, 60, 100, 121, buffer).has_value());
  std::vector<size_t> markers;  // where each restart marker is
  for (size_t i = testing::find_jpeg_marker(jpeg, 0xDA); i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] >= 0xD0 && jpeg[i + 1] <= 0xD7) markers.push_back(i);
  }
  ASSERT_EQ(markers.size(), 3u * 13 - 1);
  // A marker before the window, and one inside it (the 20th ends interval 19: band 6), renumbered.
  for (size_t m : {markers[3], markers[19]}) {
    std::vector<uint8_t> bad = jpeg;
    bad[m + 1] = static_cast<uint8_t>(0xD0 + (bad[m + 1] - 0xD0 + 3) % 8);
    EXPECT_FALSE(seek(bad, 8, 40, 60, 100, 121, buffer).has_value());
  }
  // A marker missing (its two bytes cut out) and one duplicated.
  std::vector<uint8_t> missing = jpeg;
  missing.erase(missing.begin() + static_cast<ptrdiff_t>(markers[5]),
                missing.begin() + static_cast<ptrdiff_t>(markers[5]) + 2);
  EXPECT_FALSE(seek(missing, 8, 40, 60, 100, 121, buffer).has_value());
  std::vector<uint8_t> duplicated = jpeg;
  duplicated.insert(duplicated.begin() + static_cast<ptrdiff_t>(markers[5]),
                    jpeg.begin() + static_cast<ptrdiff_t>(markers[5]),
                    jpeg.begin() + static_cast<ptrdiff_t>(markers[5]) + 2);
  EXPECT_FALSE(seek(duplicated, 8, 40, 60, 100, 121, buffer).has_value());
  // Cut short above the window's end.
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(markers[20]));
  EXPECT_FALSE(seek(cut, 8, 40, 60, 100, 121, buffer).has_value());
}

TEST(JpegRestartSeekTest, TheTranscodeWritesIntervalsOfAtLeast64PixelsThatTileTheRows) {
  JpegSpec spec;
  spec.width = 256;  // 16 MCUs to a row: intervals of 4 (64 px)
  spec.height = 64;
  Result<std::vector<uint8_t>> t = transcode_jpeg_for_crops(span(encode_jpeg(spec)));
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(read_image_header(span(t.value())).value().restart_interval, 4);
  spec.width = 16 * 9 - 3;  // 9 MCUs: 3 is too short, 9 the row
  t = transcode_jpeg_for_crops(span(encode_jpeg(spec)));
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(read_image_header(span(t.value())).value().restart_interval, 9);
  spec.width = 96;  // 6 MCUs: the row
  t = transcode_jpeg_for_crops(span(encode_jpeg(spec)));
  EXPECT_EQ(read_image_header(span(t.value())).value().restart_interval, 6);
  spec.components = 1;  // gray: 8 px MCUs, 12 to a row, none of 8 to 11 divides it: the row
  t = transcode_jpeg_for_crops(span(encode_jpeg(spec)));
  EXPECT_EQ(read_image_header(span(t.value())).value().restart_interval, 12);
  spec.width = 8 * 16;  // 16: intervals of 8
  t = transcode_jpeg_for_crops(span(encode_jpeg(spec)));
  EXPECT_EQ(read_image_header(span(t.value())).value().restart_interval, 8);
}

}  // namespace
}  // namespace stoker::image::test
