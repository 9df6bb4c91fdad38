// The SIMD resampler: PIL's two fixed-point passes (resample_filter.h) with Highway, compiled
// for every x86 target Highway knows (SSSE3, SSE4, AVX2, AVX-512) and picked at run time
// (HWY_DYNAMIC_DISPATCH; Highway reads CPUID itself, no ifunc). The arithmetic is the scalar
// reference's, in int32 lanes, so the bytes are identical:
//   horizontal pass: a group of 8 source rows is interleaved pixel by pixel as RGBX (row 0's
//     pixel x, row 1's pixel x, ...), so a column of the group is 32 bytes, one to four vectors
//     of int32 lanes, and every lane shares the tap's weight: per tap and vector one widening
//     load, one multiply, one add. The resized rows are stored as three planes (R, G, B rows);
//   vertical pass: an output row of a plane is a weighted sum of whole rows of that plane, one
//     vector of int32 lanes at a time, then, without a round trip through memory, flipped
//     (the vector reversed and stored mirrored), converted to float (float_pixel.h's operations,
//     lane by lane, not fused) or to bytes, and stored into its CHW plane (float: with
//     non-temporal stores where the rows are aligned whole vectors, as a 224-wide sample's are
//     in a batch).

#include <hwy/cache_control.h>

#include <algorithm>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "stoker/image/resample_simd.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must follow foreach_target.h.
#include <hwy/highway.h>

#include "stoker/image/resample_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace stoker::image {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
// Highway's baseline without SIMD (one lane, too narrow for a group of rows): the reference.
Status Resample(const ResampleJob& job, SimdScratch& scratch) {
  return resample_scalar(job, scratch.rows, scratch.source);
}
#else

using D32 = hn::ScalableTag<int32_t>;
using DU32 = hn::ScalableTag<uint32_t>;
using DF = hn::ScalableTag<float>;
using D8 = hn::Rebind<uint8_t, D32>;  // as many bytes as int32 lanes
using D8Full = hn::ScalableTag<uint8_t>;
constexpr size_t kLanes = hn::MaxLanes(D32());
// The horizontal pass takes 8 source rows at a time, as two quads of 4 rows: a quad's column is
// 16 bytes (4 RGBX words), a group's 32, which are 32 / kLanes vectors of int32 lanes.
constexpr size_t kQuadBytes = 16;
constexpr size_t kGroup = 8;
constexpr size_t kGroupBytes = 32;
constexpr size_t kColumnVectors = kGroupBytes / kLanes;
static_assert(kColumnVectors >= 1 && kGroupBytes % kLanes == 0, "vectors of 128 to 512 bits");
// The start of a fixed-point sum: half of 2^precision, so that the shift rounds.
HWY_INLINE hn::Vec<D32> half(int precision) { return hn::Set(D32(), 1 << (precision - 1)); }

// PIL's rounding and clipping of fixed-point sums (a bicubic filter's can be negative).
HWY_INLINE hn::Vec<D32> round_and_clip(hn::Vec<D32> sum, int precision) {
  return hn::Min(hn::Max(hn::ShiftRightSame(sum, precision), hn::Zero(D32())), hn::Set(D32(), 255));
}

// The taps' weighted sum of the bytes at p, p + step, ... (count of them, rounded up to even:
// w is 0 past count and the bytes after the last are readable), rounded and clipped.
HWY_INLINE hn::Vec<D32> weighted_sum(const uint8_t* p, size_t step, const int32_t* w, int count,
                                     int precision) {
  const D32 d32;
  const auto tap = [&](int t) {
    return hn::Mul(hn::PromoteTo(d32, hn::LoadU(D8(), p + t * step)), hn::Set(d32, w[t]));
  };
  auto even = half(precision), odd = hn::Zero(d32);
  for (int t = 0; t < count; t += 2) {
    even = hn::Add(even, tap(t));
    odd = hn::Add(odd, tap(t + 1));
  }
  return round_and_clip(hn::Add(even, odd), precision);
}

HWY_INLINE hn::Vec<D8> to_bytes(hn::Vec<D32> v) { return hn::U8FromU32(hn::BitCast(DU32(), v)); }

// Pixels x .. x + 3 of a quad of rows into `out` as RGBX, column by column (kGroupBytes apart):
// each row's 16 bytes at offset `load` shuffled by `shuffle` (4 pixels to RGBX words), then a
// 4 x 4 transpose of the words.
HWY_INLINE void pack_block(const uint8_t* const* rows, size_t load,
                           hn::Vec<hn::Full128<uint8_t> > shuffle, uint8_t* out) {
  const hn::Full128<uint8_t> d8;
  const hn::Full128<uint32_t> d32;
  const hn::Full128<uint64_t> d64;
  hn::Vec<decltype(d32)> v[4];
#pragma GCC unroll 4
  for (size_t g = 0; g < 4; ++g)
    v[g] = hn::BitCast(d32, hn::TableLookupBytesOr0(hn::LoadU(d8, rows[g] + load), shuffle));
  const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d32, v[0], v[1]));
  const auto t1 = hn::BitCast(d64, hn::InterleaveUpper(d32, v[0], v[1]));
  const auto t2 = hn::BitCast(d64, hn::InterleaveLower(d32, v[2], v[3]));
  const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d32, v[2], v[3]));
  hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d64, t0, t2)), d8, out);
  hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d64, t0, t2)), d8, out + kGroupBytes);
  hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d64, t1, t3)), d8, out + 2 * kGroupBytes);
  hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d64, t1, t3)), d8, out + 3 * kGroupBytes);
}

// Interleaves the 8 source rows at `group` (each at its pixel 0), columns [begin, end), into
// s.packed as RGBX: column x's 8 words at (x - begin) * kGroupBytes. Four pixels at a time from
// 16-byte loads; the last four come from a load that ends at the row's end (never past it),
// shuffled from 4 bytes further in.
void pack_group(const uint8_t* const* group, int begin, int end, SimdScratch& s) {
  const size_t n = static_cast<size_t>(end - begin);
  const uint8_t* rows[kGroup];
  for (size_t g = 0; g < kGroup; ++g) rows[g] = group[g] + static_cast<size_t>(begin) * 3;
  uint8_t* out = s.packed.data();
  if (n < 6) {  // fewer than the 16 bytes of one load
    for (size_t x = 0; x < n; ++x) {
      for (size_t g = 0; g < kGroup; ++g) {
        std::memcpy(out + x * kGroupBytes + 4 * g, rows[g] + 3 * x, 3);
        out[x * kGroupBytes + 4 * g + 3] = 0;
      }
    }
    return;
  }
  const hn::Full128<uint8_t> d8;
  alignas(16) static constexpr uint8_t kFront[16] = {0, 1, 2, 0x80, 3, 4,  5,  0x80,
                                                     6, 7, 8, 0x80, 9, 10, 11, 0x80};
  alignas(16) static constexpr uint8_t kBack[16] = {4,  5,  6,  0x80, 7,  8,  9,  0x80,
                                                    10, 11, 12, 0x80, 13, 14, 15, 0x80};
  const auto block = [&](size_t x, size_t load, hn::Vec<decltype(d8)> shuffle) {
    pack_block(rows, load, shuffle, out + x * kGroupBytes);
    pack_block(rows + 4, load, shuffle, out + x * kGroupBytes + kQuadBytes);
  };
  const auto front = hn::Load(d8, kFront);
  size_t x = 0;
  for (; x + 6 <= n; x += 4) block(x, 3 * x, front);
  // Up to 5 pixels are left: the 4 before the last 2 (a load that still fits), then the last 4.
  if (x + 4 < n) block(n - 6, 3 * (n - 6), front);
  block(n - 4, 3 * n - 16, hn::Load(d8, kBack));
}

// The horizontal pass of one group of rows: from s.packed into s.group, quad by quad (a
// quad's output columns of 4 RGBX words back to back).
void horizontal_group(const AxisTaps& h, int column_begin, size_t width, SimdScratch& s) {
  const D32 d32;
  const int32_t* HWY_RESTRICT first = h.first.data();
  const int32_t* HWY_RESTRICT count = h.count.data();
  const int32_t* HWY_RESTRICT weights = h.weights.data();
  const uint8_t* HWY_RESTRICT packed = s.packed.data();
  uint8_t* HWY_RESTRICT out = s.group.data();
  const size_t quad_size = hwy::RoundUpTo(width, kLanes) * kQuadBytes;  // one quad's output
  const size_t stride = static_cast<size_t>(h.stride);
  for (size_t x = 0; x < width; ++x) {
    const uint8_t* p = packed + static_cast<size_t>(first[x] - column_begin) * kGroupBytes;
    const int32_t* w = weights + x * stride;
    // The loops over the column's vectors are unrolled, so the sums stay in registers.
    hn::Vec<D32> sum[kColumnVectors];
#pragma GCC unroll 8
    for (size_t k = 0; k < kColumnVectors; ++k) sum[k] = half(h.precision);
    for (int t = 0; t < count[x]; ++t) {
      const auto weight = hn::Set(d32, w[t]);
#pragma GCC unroll 8
      for (size_t k = 0; k < kColumnVectors; ++k) {
        const auto bytes = hn::LoadU(D8(), p + t * kGroupBytes + k * kLanes);
        sum[k] = hn::Add(sum[k], hn::Mul(hn::PromoteTo(d32, bytes), weight));
      }
    }
#pragma GCC unroll 8
    for (size_t k = 0; k < kColumnVectors; ++k) {
      const size_t byte = k * kLanes;  // in the group's column
      hn::StoreU(to_bytes(round_and_clip(sum[k], h.precision)), D8(),
                 out + (byte / kQuadBytes) * quad_size + x * kQuadBytes + byte % kQuadBytes);
    }
  }
}

// The start of vector i of those covering [0, n) with `lanes` values each: the last one ends
// at n, overlapping its predecessor (so what it writes must not depend on what it reads from
// there). Precondition: n >= lanes.
HWY_INLINE size_t vector_start(size_t i, size_t n, size_t lanes) {
  return std::min(i * lanes, n - lanes);
}

// The RGBX words of `width` pixels at `in` as three planes' rows at out, out + pitch,
// out + 2 pitch.
void to_planes(const uint8_t* in, int width, size_t pitch, uint8_t* out) {
  const D8Full d;
  const size_t n = static_cast<size_t>(width);
  if (n < hn::Lanes(d)) {
    for (size_t x = 0; x < n; ++x)
      for (size_t c = 0; c < 3; ++c) out[c * pitch + x] = in[4 * x + c];
    return;
  }
  for (size_t i = 0; i < hwy::DivCeil(n, hn::Lanes(d)); ++i) {
    const size_t x = vector_start(i, n, hn::Lanes(d));
    hn::Vec<D8Full> r, g, b, unused;
    hn::LoadInterleaved4(d, in + 4 * x, r, g, b, unused);
    hn::StoreU(r, d, out + x);
    hn::StoreU(g, d, out + pitch + x);
    hn::StoreU(b, d, out + 2 * pitch + x);
  }
}

// A group's horizontally resized pixels, s.group (per quad, column x's 4 RGBX words at
// x * kQuadBytes), into the planes of rows `row` .. row + 7 of s.rows.
void split_group(const ResampleJob& job, size_t row, size_t pitch, SimdScratch& s) {
  const DU32 d;
  const size_t words = hwy::RoundUpTo(static_cast<size_t>(job.width), hn::Lanes(d));
  for (size_t quad = 0; quad < 2; ++quad) {
    const uint32_t* in = reinterpret_cast<const uint32_t*>(s.group.data()) + quad * 4 * words;
    uint32_t* out = reinterpret_cast<uint32_t*>(s.rgbx.data());
    for (size_t x = 0; x < words; x += hn::Lanes(d)) {
      hn::Vec<DU32> v0, v1, v2, v3;
      hn::LoadInterleaved4(d, in + 4 * x, v0, v1, v2, v3);
      hn::StoreU(v0, d, out + x);
      hn::StoreU(v1, d, out + words + x);
      hn::StoreU(v2, d, out + 2 * words + x);
      hn::StoreU(v3, d, out + 3 * words + x);
    }
    for (size_t g = 0; g < 4; ++g) {
      to_planes(s.rgbx.data() + g * words * 4, job.width, pitch,
                &s.rows[(row + quad * 4 + g) * 3 * pitch]);
    }
  }
}

// One row of one output plane: `width` (>= kLanes) values, each the taps' weighted sum of the
// plane rows at in, in + step, ..., flipped or not, converted (kFloat: float_pixel) and
// stored at `out`. Whole vectors; the last one ends at the row's end, overlapping. kTaps > 0:
// the taps, rounded up to even, are exactly kTaps, and their weights stay in registers.
// `stream` (kFloat only; `out` aligned to a vector and `width` a whole number of vectors):
// non-temporal stores, which do not read the sample's cache lines first (the batch is far larger
// than the caches, so the plain stores missed).
template <bool kFloat, int kTaps>
void vertical_row(const uint8_t* HWY_RESTRICT in, size_t step, const int32_t* HWY_RESTRICT w,
                  int count, int precision, size_t width, bool flip, bool stream, UnitScale unit,
                  float mean, float std, uint8_t* HWY_RESTRICT out) {
  const D32 d;
  const DF df;
  const auto mean_v = hn::Set(df, mean), std_v = hn::Set(df, std);
  const auto unit_v = hn::Set(df, unit == UnitScale::kDivide ? 255.0f : kInverse255);
  hn::Vec<D32> weight[kTaps > 0 ? kTaps : 1];
#pragma GCC unroll 8
  for (int t = 0; t < kTaps; ++t) weight[t] = hn::Set(d, w[t]);
  const size_t vectors = hwy::DivCeil(width, kLanes);
  for (size_t i = 0; i < vectors; ++i) {
    const size_t x = std::min(i * kLanes, width - kLanes);
    hn::Vec<D32> v;
    if constexpr (kTaps > 0) {
      auto sum = half(precision);
#pragma GCC unroll 8
      for (int t = 0; t < kTaps; ++t)
        sum =
            hn::Add(sum, hn::Mul(hn::PromoteTo(d, hn::LoadU(D8(), in + x + t * step)), weight[t]));
      v = round_and_clip(sum, precision);
    } else {
      v = weighted_sum(in + x, step, w, count, precision);
    }
    size_t column = x;
    if (flip) {
      v = hn::Reverse(d, v);
      column = width - x - kLanes;
    }
    if constexpr (kFloat) {
      const auto x = hn::ConvertTo(df, v);
      const auto scaled = unit == UnitScale::kDivide ? hn::Div(x, unit_v) : hn::Mul(x, unit_v);
      const auto value = hn::Div(hn::Sub(scaled, mean_v), std_v);
      float* at = reinterpret_cast<float*>(out) + column;
      if (stream) {
        hn::Stream(value, df, at);
      } else {
        hn::StoreU(value, df, at);
      }
    } else {
      hn::StoreU(to_bytes(v), D8(), out + column);
    }
  }
}

// vertical_row with the weights in registers when there are at most 8 taps (downscales up to
// about 3.5x), else read per vector.
template <bool kFloat>
void vertical_row_any(const uint8_t* in, size_t step, const int32_t* w, int count, int precision,
                      size_t width, bool flip, bool stream, UnitScale unit, float mean, float std,
                      uint8_t* out) {
  switch ((count + 1) / 2) {
    case 1:
      return vertical_row<kFloat, 2>(in, step, w, count, precision, width, flip, stream, unit, mean,
                                     std, out);
    case 2:
      return vertical_row<kFloat, 4>(in, step, w, count, precision, width, flip, stream, unit, mean,
                                     std, out);
    case 3:
      return vertical_row<kFloat, 6>(in, step, w, count, precision, width, flip, stream, unit, mean,
                                     std, out);
    case 4:
      return vertical_row<kFloat, 8>(in, step, w, count, precision, width, flip, stream, unit, mean,
                                     std, out);
    default:
      return vertical_row<kFloat, 0>(in, step, w, count, precision, width, flip, stream, unit, mean,
                                     std, out);
  }
}

// Output row y of every plane, from the resized rows at `rows` (the first of its taps), into
// the sample (`stream`: vertical_row's).
void vertical_output_row(const ResampleJob& job, int y, const uint8_t* rows, size_t pitch,
                         bool stream) {
  const AxisTaps& v = *job.vertical;
  const size_t width = static_cast<size_t>(job.width);
  const size_t row_step = 3 * pitch;  // from a plane's row to the same plane's next row
  const size_t element = job.to_float ? sizeof(float) : 1;
  const int32_t* w = &v.weights[static_cast<size_t>(y) * v.stride];
  for (int c = 0; c < 3; ++c) {
    const uint8_t* in = rows + c * pitch;
    if (width < kLanes) {  // narrower than a vector: one value at a time
      for (int x = 0; x < job.width; ++x) {
        const size_t at = static_cast<size_t>(y) * job.width + (job.flip ? job.width - 1 - x : x);
        write_value(job, c, at, filter_bytes(in + x, row_step, w, v.count[y], v.precision));
      }
      continue;
    }
    uint8_t* out = job.dst + ((static_cast<size_t>(c) * job.height + y) * width) * element;
    if (job.to_float) {
      vertical_row_any<true>(in, row_step, w, v.count[y], v.precision, width, job.flip, stream,
                             job.unit, job.mean[c], job.std[c], out);
    } else {
      vertical_row_any<false>(in, row_step, w, v.count[y], v.precision, width, job.flip, false,
                              UnitScale::kDivide, 0, 1, out);
    }
  }
}

// Stream rows read per read (4 groups): the decoder's and the resampler's code and data take
// turns in the caches less often than group by group (measured: 8 rows at a time was slower).
constexpr int kReadRows = 4 * static_cast<int>(kGroup);
// Groups of resized rows the window holds beyond the vertical filter's reach.
constexpr size_t kWindowGroups = 8;

// The source rows of the horizontal pass, 8 at a time: the view's, or the stream's, read into
// s.ring kReadRows at a time as they are needed.
class SourceGroups {
 public:
  SourceGroups(const ResampleJob& job, SimdScratch& s) : job_(job), s_(s) {
    if (job.stream != nullptr) s.ring.resize(kReadRows * job.stream->row_bytes);
  }

  // Reads (and drops) the stream's rows up to `y`.
  Status skip_to(int y) {
    if (job_.stream == nullptr) return Status::ok();
    while (read_ < y) STOKER_RETURN_IF_ERROR(read(std::min(kReadRows, y - read_)));
    return Status::ok();
  }

  // Rows y .. y + 7 at `group` (each at its pixel 0), the last one repeated past `row_end`;
  // for a stream, y is the row after the last group's (or the row skipped to).
  Status get(int y, int row_end, const uint8_t** group) {
    const int n = std::min<int>(kGroup, row_end - y);
    if (job_.stream == nullptr) {
      for (size_t g = 0; g < kGroup; ++g) group[g] = job_.src.row(y + std::min<int>(g, n - 1));
      return Status::ok();
    }
    if (y >= read_) STOKER_RETURN_IF_ERROR(read(std::min(kReadRows, row_end - y)));
    const RgbRowSource& stream = *job_.stream;
    const uint8_t* first = s_.ring.data() + (y - first_) * stream.row_bytes + stream.row_offset;
    for (size_t g = 0; g < kGroup; ++g)
      group[g] = first + std::min<int>(g, n - 1) * stream.row_bytes;
    return Status::ok();
  }

 private:
  Status read(int count) {
    uint8_t* rows[kReadRows];
    for (int i = 0; i < count; ++i) rows[i] = s_.ring.data() + i * job_.stream->row_bytes;
    first_ = read_;
    read_ += count;
    return job_.stream->read(rows, count);
  }

  const ResampleJob& job_;
  SimdScratch& s_;
  int first_ = 0;  // the stream row at the ring's start
  int read_ = 0;   // stream rows read
};

Status Resample(const ResampleJob& job, SimdScratch& s) {
  const AxisTaps& h = *job.horizontal;
  const AxisTaps& v = *job.vertical;
  const int row_begin = v.source_begin(), row_end = v.source_end();
  const int column_begin = h.source_begin(), column_end = h.source_end();
  const size_t columns = static_cast<size_t>(column_end - column_begin);
  const size_t width = static_cast<size_t>(job.width);
  const size_t group_width = hwy::RoundUpTo(width, kLanes);  // whole vectors of words
  const size_t pitch = width;                                // of one plane's row
  const size_t row_step = 3 * pitch;
  // The resized rows kept: a window of the rows the next output row reads and kWindowGroups
  // groups (the rows still needed move to its start once every few groups, not every group).
  // When the next output row's taps have not all been made, they began less than its tap count
  // before the group to make, so the window holds them.
  const int taps = *std::max_element(v.count.begin(), v.count.end());
  const size_t window = std::min(hwy::RoundUpTo(static_cast<size_t>(row_end - row_begin), kGroup),
                                 static_cast<size_t>(taps) + kWindowGroups * kGroup);
  s.packed.resize((columns + 1) * kGroupBytes);  // + the column after the last tap
  s.rgbx.resize(group_width * kQuadBytes);
  s.group.resize(group_width * kGroupBytes);
  s.rows.resize((window + 1) * row_step);  // + the row after the last tap

  // Float samples whose rows are whole aligned vectors are written with non-temporal stores,
  // made visible (sfence) before returning, however it returns.
  const bool stream = job.to_float && width % kLanes == 0 &&
                      reinterpret_cast<uintptr_t>(job.dst) % (kLanes * sizeof(float)) == 0;
  struct Flush {
    bool streamed;
    ~Flush() {
      if (streamed) hwy::FlushStream();
    }
  } flush{stream};

  SourceGroups source(job, s);
  STOKER_RETURN_IF_ERROR(source.skip_to(row_begin));
  int window_first = row_begin;  // the source row of the window's first row
  int next = 0;                  // the next output row
  for (int y = row_begin; y < row_end; y += static_cast<int>(kGroup)) {
    // Horizontal pass, 8 source rows at a time: each output pixel's RGBX words come out
    // interleaved by quad, then go to the planes of their rows in the window, after the rows
    // still needed have moved to its start if the group would not fit.
    const uint8_t* group[kGroup];
    STOKER_RETURN_IF_ERROR(source.get(y, row_end, group));
    if (static_cast<size_t>(y - window_first) + kGroup > window) {
      const int keep = std::min(v.first[next], y);
      std::memmove(s.rows.data(), &s.rows[static_cast<size_t>(keep - window_first) * row_step],
                   static_cast<size_t>(y - keep) * row_step);
      window_first = keep;
    }
    pack_group(group, column_begin, column_end, s);
    horizontal_group(h, column_begin, width, s);
    split_group(job, static_cast<size_t>(y - window_first), pitch, s);

    // Vertical pass of the output rows whose taps are all made, straight into the sample.
    const int made = std::min(y + static_cast<int>(kGroup), row_end);
    for (; next < job.height && v.first[next] + v.count[next] <= made; ++next) {
      vertical_output_row(job, next,
                          &s.rows[static_cast<size_t>(v.first[next] - window_first) * row_step],
                          pitch, stream);
    }
  }
  // The rest of a stream, so that its decoder finishes.
  if (job.stream != nullptr) return source.skip_to(job.stream->height);
  return Status::ok();
}

#endif  // HWY_TARGET == HWY_SCALAR

int64_t Target() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace stoker::image
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace stoker::image {

HWY_EXPORT(Resample);
HWY_EXPORT(Target);

Status resample_simd(const ResampleJob& job, SimdScratch& scratch) {
  return HWY_DYNAMIC_DISPATCH(Resample)(job, scratch);
}

const char* simd_target_name() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(Target)()); }

}  // namespace stoker::image
#endif  // HWY_ONCE
