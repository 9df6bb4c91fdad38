// decode_rgb_rows for JPEG (decode.h): the libjpeg calls run in POD-only steps under
// JpegDecompressor::run (start and crop; then per read: skip, read and, after the last row,
// stop), outside libjpeg's error handler. Where the JPEG's restart intervals tile
// it (transcode_jpeg_for_crops), only the intervals the crop touches are decoded
// (jpeg_restart_seek.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "stoker/image/format_decoders.h"
#include "stoker/image/jpeg_decompressor.h"
#include "stoker/image/jpeg_restart_seek.h"

namespace stoker::image {
namespace {

// The DCT scales tried, in eighths, smallest first: libjpeg-turbo 2.1.5 has SIMD inverse DCTs
// for 1/4 and 1/2 only. The others run in C: 5/8 to 7/8 are slower than 8/8, and 3/8 is slower
// than 1/2, which covers more (docs/ARCHITECTURE.md). 8/8 is the fallback.
constexpr int kScales[] = {2, 4};

// Rows read per jpeg_read_scanlines call (libjpeg returns at most its own row group, 1-4).
constexpr int kRowBatch = 4;

// The smallest accelerated scale at which `crop` still covers min_width x min_height.
int choose_scale(const CropRect& crop, const DecodeRequest& request) {
  if (request.min_width <= 0 && request.min_height <= 0) return 8;
  for (int s : kScales) {
    if (int64_t{crop.width} * s >= int64_t{request.min_width} * 8 &&
        int64_t{crop.height} * s >= int64_t{request.min_height} * 8) {
      return s;
    }
  }
  return 8;
}

// Step 1, POD only: output settings, jpeg_start_decompress, jpeg_crop_scanline.
struct StartJob {
  int scale_num;
  bool cmyk;              // 4 components: libjpeg gives CMYK, converted here
  JDIMENSION col0, col1;  // in: output columns wanted, [col0, col1) at the scale (col1 is
  JDIMENSION row0, row1;  // clamped to the scaled size here); rows likewise
  JDIMENSION crop_x;      // out: first column libjpeg decodes (iMCU-aligned, < col0 unless 0)
  JDIMENSION crop_width;  // out: columns libjpeg decodes per row
};

void start(j_decompress_ptr cinfo, void* p) {
  auto* job = static_cast<StartJob*>(p);
  set_rgb_output(cinfo, job->scale_num);
  jpeg_start_decompress(cinfo);
  if (job->col1 > cinfo->output_width) job->col1 = cinfo->output_width;
  if (job->row1 > cinfo->output_height) job->row1 = cinfo->output_height;
  // libjpeg treats the cropped columns' ends as the image's: there, fancy upsampling repeats
  // the last chroma sample instead of blending in its neighbour, and a progressive JPEG's block
  // smoothing (applied where its scans leave coefficient bits unsent) repeats the edge block's
  // DC instead of reading the two blocks beyond it (libjpeg-turbo 2.1 smooths over 5x5 blocks).
  // A margin on each side (where the image has one) keeps the wanted columns' neighbours inside
  // the decoded ones: a column, or for a progressive JPEG two blocks of its most subsampled
  // component (two iMCUs).
  const JDIMENSION margin =
      jpeg_has_multiple_scans(cinfo)
          ? static_cast<JDIMENSION>(2 * cinfo->max_h_samp_factor * cinfo->min_DCT_scaled_size)
          : 1;
  job->crop_x = job->col0 > margin ? job->col0 - margin : 0;
  job->crop_width = std::min(job->col1 + margin, cinfo->output_width) - job->crop_x;
  // jpeg_crop_scanline replaces the fancy upsampler by the plain one where the decoded columns
  // leave a component under 2 samples a row (jdsample.c upsamples fancy only above 2), as a
  // column's crop at the left edge, or just past an iMCU's start at the right edge, would: more
  // than max_h_samp_factor columns keep every component at 2 or more.
  const JDIMENSION min_width =
      std::min(static_cast<JDIMENSION>(cinfo->max_h_samp_factor) + 1, cinfo->output_width);
  if (job->crop_width < min_width) {
    job->crop_x = std::min(job->crop_x, cinfo->output_width - min_width);
    job->crop_width = min_width;
  }
  if (job->crop_width < cinfo->output_width) {
    jpeg_crop_scanline(cinfo, &job->crop_x, &job->crop_width);
  }
}

// PIL reads every 4-component JPEG as Adobe-inverted CMYK ("CMYK;I") and converts to RGB with
// R = 255 - K - C(255 - K)/255, rounded as its MULDIV255; on the stored samples c, k that is
// k - (255 - c) k / 255.
inline uint8_t cmyk_channel(int stored, int stored_k) {
  const int t = (255 - stored) * stored_k + 128;
  return static_cast<uint8_t>(stored_k - (((t >> 8) + t) >> 8));
}

void cmyk_row_to_rgb(const uint8_t* cmyk, uint8_t* rgb, JDIMENSION width) {
  for (JDIMENSION i = 0; i < width; ++i, cmyk += 4, rgb += 3) {
    rgb[0] = cmyk_channel(cmyk[0], cmyk[3]);
    rgb[1] = cmyk_channel(cmyk[1], cmyk[3]);
    rgb[2] = cmyk_channel(cmyk[2], cmyk[3]);
  }
}

// Step 2, POD only, once per read: skip to the first row (on the first read), read `count`
// rows, and after the last one finish or stop.
struct ReadJob {
  JDIMENSION row0, row1;  // output rows wanted, [row0, row1)
  bool skipped;           // the rows above row0 have been skipped
  uint8_t* const* rows;   // this read's: `count` rows of crop_width * 3 bytes
  JDIMENSION count;
  uint8_t* cmyk_rows;  // kRowBatch rows of crop_width * 4 bytes, if reading CMYK
  JDIMENSION crop_width;
};

void read_rows(j_decompress_ptr cinfo, void* p) {
  auto* job = static_cast<ReadJob*>(p);
  if (!job->skipped) {
    job->skipped = true;
    if (job->row0 > 0) jpeg_skip_scanlines(cinfo, job->row0);
  }
  const JDIMENSION end = cinfo->output_scanline + job->count;
  JSAMPROW rows[kRowBatch];
  while (cinfo->output_scanline < end) {
    const JDIMENSION done = job->count - (end - cinfo->output_scanline);
    const JDIMENSION want = std::min<JDIMENSION>(kRowBatch, end - cinfo->output_scanline);
    for (JDIMENSION i = 0; i < want; ++i) {
      rows[i] = job->cmyk_rows ? job->cmyk_rows + i * job->crop_width * 4 : job->rows[done + i];
    }
    const JDIMENSION got = jpeg_read_scanlines(cinfo, rows, want);
    if (job->cmyk_rows) {
      for (JDIMENSION i = 0; i < got; ++i) {
        cmyk_row_to_rgb(rows[i], job->rows[done + i], job->crop_width);
      }
    }
  }
  if (cinfo->output_scanline < job->row1) return;
  // Down to the last row: read on to the end of the image, so that a missing end is noticed (PIL
  // refuses a JPEG without its EOI marker). Otherwise stop here.
  if (cinfo->output_scanline == cinfo->output_height) {
    jpeg_finish_decompress(cinfo);
  } else {
    jpeg_abort_decompress(cinfo);
  }
}

// A JPEG decode read row by row: one ReadJob per read.
class JpegRows : public DecodedRows {
 public:
  Status read(uint8_t* const* rows, int count) override {
    if (count < 1 || count > left_)
      return invalid_argument("read of " + std::to_string(count) + " rows, " +
                              std::to_string(left_) + " left");
    job_.rows = rows;
    job_.count = static_cast<JDIMENSION>(count);
    const Status status = jpeg_->run(read_rows, &job_);
    left_ = status.is_ok() ? left_ - count : 0;
    return status;
  }

  JpegDecompressor* jpeg_ = nullptr;
  ReadJob job_{};
  int left_ = 0;  // rows not yet read
};

}  // namespace

Result<DecodedRows*> jpeg_rows(ByteSpan bytes, const DecodeRequest& request, DecodeBuffer& buffer) {
  // Two decompressors per thread, reused (no allocation per image): the original's header, and
  // the restart window's decode.
  thread_local JpegDecompressor original;
  thread_local JpegDecompressor window;
  STOKER_RETURN_IF_ERROR(original.read_header(bytes, request.max_pixels));
  j_decompress_ptr cinfo = original.cinfo();
  STOKER_ASSIGN_OR_RETURN(const CropRect crop,
                          resolve_crop(request.crop, static_cast<int>(cinfo->image_width),
                                       static_cast<int>(cinfo->image_height)));
  const int scale = choose_scale(crop, request);
  // The crop in scaled pixels: the whole scaled pixels it touches.
  const double f = scale / 8.0;
  const PixelBox scaled{crop.x * f, crop.y * f, (crop.x + crop.width) * f,
                        (crop.y + crop.height) * f};
  StartJob start_job{};
  start_job.scale_num = scale;
  start_job.cmyk = cinfo->num_components == 4;
  start_job.col0 = static_cast<JDIMENSION>(std::floor(scaled.x0));
  start_job.col1 = static_cast<JDIMENSION>(std::ceil(scaled.x1));
  start_job.row0 = static_cast<JDIMENSION>(std::floor(scaled.y0));
  start_job.row1 = static_cast<JDIMENSION>(std::ceil(scaled.y1));

  // Decode only the restart intervals the crop touches, where the markers allow.
  JpegDecompressor* jpeg = &original;
  JDIMENSION first_row = 0, first_col = 0;  // where the decoded stream starts in the image
  if (std::optional<RestartWindow> w =
          seek_restart_window(cinfo, bytes, scale, start_job.col0, start_job.col1, start_job.row0,
                              start_job.row1, buffer)) {
    jpeg = &window;
    STOKER_RETURN_IF_ERROR(jpeg->read_header(w->stream, request.max_pixels));
    first_row = w->first_row;
    first_col = w->first_col;
    start_job.row0 -= first_row;
    start_job.row1 -= first_row;
    start_job.col0 -= first_col;
    start_job.col1 -= first_col;
  }
  STOKER_RETURN_IF_ERROR(jpeg->run(start, &start_job));

  thread_local JpegRows rows;
  rows.jpeg_ = jpeg;
  rows.job_ = {};
  rows.job_.row0 = start_job.row0;
  rows.job_.row1 = start_job.row1;
  rows.job_.crop_width = start_job.crop_width;
  if (start_job.cmyk) {
    rows.job_.cmyk_rows =
        buffer.area(DecodeBuffer::kRows, size_t{start_job.crop_width} * 4 * kRowBatch);
  }
  rows.left_ = static_cast<int>(start_job.row1 - start_job.row0);
  const JDIMENSION skip_cols = start_job.col0 - start_job.crop_x;
  const double top = first_row + start_job.row0;   // the rows' first row in the image
  const double left = first_col + start_job.col0;  // and column
  rows.width = static_cast<int>(start_job.col1 - start_job.col0);
  rows.height = rows.left_;
  rows.row_bytes = size_t{start_job.crop_width} * 3;
  rows.row_offset = size_t{skip_cols} * 3;
  rows.box = {scaled.x0 - left, scaled.y0 - top, scaled.x1 - left, scaled.y1 - top};
  rows.scale_num = scale;
  return &rows;
}

}  // namespace stoker::image
