#include "stoker/image/resample_kernels.h"

namespace stoker::image {

Status resample_scalar(const ResampleJob& job, std::vector<uint8_t>& rows,
                       std::vector<uint8_t>& source) {
  RgbView src = job.src;
  if (job.stream != nullptr) {  // all rows first, one after the other
    RgbRowSource& stream = *job.stream;
    source.resize(stream.row_bytes * stream.height);
    uint8_t* at[1];
    for (int y = 0; y < stream.height; ++y) {
      at[0] = source.data() + y * stream.row_bytes;
      STOKER_RETURN_IF_ERROR(stream.read(at, 1));
    }
    src = {source.data() + stream.row_offset, stream.width, stream.height,
           static_cast<ptrdiff_t>(stream.row_bytes)};
  }
  const AxisTaps& h = *job.horizontal;
  const AxisTaps& v = *job.vertical;
  const int row_begin = v.source_begin(), row_end = v.source_end();
  const size_t row_bytes = static_cast<size_t>(job.width) * 3;
  rows.resize((row_end - row_begin) * row_bytes);

  // Horizontal pass over the source rows the vertical pass reads.
  for (int y = row_begin; y < row_end; ++y) {
    const uint8_t* in = src.row(y);
    uint8_t* out = &rows[(y - row_begin) * row_bytes];
    for (int x = 0; x < job.width; ++x) {
      const int32_t* w = &h.weights[static_cast<size_t>(x) * h.stride];
      const uint8_t* p = in + h.first[x] * 3;
      for (int c = 0; c < 3; ++c)
        out[x * 3 + c] = filter_bytes(p + c, 3, w, h.count[x], h.precision);
    }
  }

  // Vertical pass, flip, and the CHW write.
  for (int y = 0; y < job.height; ++y) {
    const int32_t* w = &v.weights[static_cast<size_t>(y) * v.stride];
    const uint8_t* in = &rows[(v.first[y] - row_begin) * row_bytes];
    for (int x = 0; x < job.width; ++x) {
      const size_t at = static_cast<size_t>(y) * job.width + (job.flip ? job.width - 1 - x : x);
      for (int c = 0; c < 3; ++c)
        write_value(job, c, at,
                    filter_bytes(in + x * 3 + c, row_bytes, w, v.count[y], v.precision));
    }
  }
  return Status::ok();
}

}  // namespace stoker::image
