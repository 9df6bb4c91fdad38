// The SIMD resampler: PIL's two fixed-point passes (resample_filter.h) with Highway, compiled
// for every x86 target Highway knows (SSSE3, SSE4, AVX2, AVX-512) and picked at run time
// (HWY_DYNAMIC_DISPATCH; Highway reads CPUID itself, no ifunc). The arithmetic is the scalar
// reference's, in int32 lanes, so the bytes are identical:
//   horizontal pass: a group of G = (int32 lanes) / 4 source rows is interleaved pixel by pixel
//     as RGBX (row 0's pixel x, row 1's pixel x, ...), so one vector holds the same column of G
//     rows and every lane shares the tap's weight: per tap one widening load, one multiply, one
//     add for 4G values. The resized rows are stored as three planes (R, G, B rows);
//   vertical pass: an output row of a plane is a weighted sum of whole rows of that plane, one
//     vector of int32 lanes at a time, then, without a round trip through memory, flipped
//     (the vector reversed and stored mirrored), converted to float (v * scale + bias, not
//     fused) or to bytes, and stored into its CHW plane.

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
// One lane is too narrow for a group of rows; Highway builds this target only when asked to.
void Resample(const ResampleJob& job, SimdScratch& scratch) { resample_scalar(job, scratch.rows); }
#else

using D32 = hn::ScalableTag<int32_t>;
using DU32 = hn::ScalableTag<uint32_t>;
using DF = hn::ScalableTag<float>;
using D8 = hn::Rebind<uint8_t, D32>;  // as many bytes as int32 lanes
using D8Full = hn::ScalableTag<uint8_t>;
constexpr size_t kLanes = hn::MaxLanes(D32());
constexpr size_t kGroup = kLanes / 4;       // source rows per horizontal step
constexpr size_t kGroupBytes = 4 * kGroup;  // one interleaved column of a group
static_assert(kGroup == 1 || kGroup == 2 || kGroup == 4, "vectors of 128, 256 or 512 bits");
constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

// The weighted sum of the bytes at p, p + step, ... (count of them, rounded up to even: w is
// 0 past count and the bytes after the last are readable), rounded and clipped as PIL does.
// The triangle's weights are never negative, so neither is the sum: clipping is a minimum.
HWY_INLINE hn::Vec<D32> weighted_sum(const uint8_t* p, size_t step, const int32_t* w, int count) {
  const D32 d32;
  const auto tap = [&](int t) {
    return hn::Mul(hn::PromoteTo(d32, hn::LoadU(D8(), p + t * step)), hn::Set(d32, w[t]));
  };
  auto even = hn::Set(d32, kHalf), odd = hn::Zero(d32);
  for (int t = 0; t < count; t += 2) {
    even = hn::Add(even, tap(t));
    odd = hn::Add(odd, tap(t + 1));
  }
  return hn::Min(hn::ShiftRight<kPrecisionBits>(hn::Add(even, odd)), hn::Set(d32, 255));
}

HWY_INLINE hn::Vec<D8> to_bytes(hn::Vec<D32> v) { return hn::U8FromU32(hn::BitCast(DU32(), v)); }

// The start of vector i of those covering [0, n) with `lanes` values each: the last one ends
// at n, overlapping its predecessor (so what it writes must not depend on what it reads from
// there). Precondition: n >= lanes.
HWY_INLINE size_t vector_start(size_t i, size_t n, size_t lanes) {
  return std::min(i * lanes, n - lanes);
}

// Source pixels [begin, end) of row `in` as RGBX words at `out`.
void to_rgbx(const uint8_t* in, int begin, int end, uint8_t* out) {
  const D8Full d;
  const size_t n = static_cast<size_t>(end - begin), lanes = hn::Lanes(d);
  in += static_cast<size_t>(begin) * 3;
  if (n < lanes) {
    for (size_t x = 0; x < n; ++x) {
      std::memcpy(out + 4 * x, in + 3 * x, 3);
      out[4 * x + 3] = 0;
    }
    return;
  }
  for (size_t i = 0; i < hwy::DivCeil(n, lanes); ++i) {
    const size_t x = vector_start(i, n, lanes);
    hn::Vec<D8Full> r, g, b;
    hn::LoadInterleaved3(d, in + 3 * x, r, g, b);
    hn::StoreInterleaved4(r, g, b, hn::Zero(d), d, out + 4 * x);
  }
}

// Interleaves source rows y .. y + kGroup - 1 (the last one repeated past `row_end`), columns
// [begin, end), into s.packed: column x's kGroup RGBX words at (x - begin) * kGroupBytes.
void pack_group(const RgbView& src, int y, int row_end, int begin, int end, SimdScratch& s) {
  if constexpr (kGroup == 1) {
    to_rgbx(src.row(y), begin, end, s.packed.data());
  } else {
    const DU32 d;
    const size_t n = static_cast<size_t>(end - begin);
    const uint8_t* rows[kGroup];
    for (size_t g = 0; g < kGroup; ++g) {
      uint8_t* rgbx = s.rgbx.data() + g * n * 4;
      to_rgbx(src.row(std::min(y + static_cast<int>(g), row_end - 1)), begin, end, rgbx);
      rows[g] = rgbx;
    }
    uint8_t* out = s.packed.data();
    if (n < hn::Lanes(d)) {
      for (size_t x = 0; x < n; ++x)
        for (size_t g = 0; g < kGroup; ++g)
          std::memcpy(out + x * kGroupBytes + 4 * g, rows[g] + 4 * x, 4);
      return;
    }
    const auto load = [&](size_t g, size_t x) {
      return hn::LoadU(d, reinterpret_cast<const uint32_t*>(rows[g]) + x);
    };
    for (size_t i = 0; i < hwy::DivCeil(n, hn::Lanes(d)); ++i) {
      const size_t x = vector_start(i, n, hn::Lanes(d));
      uint32_t* words = reinterpret_cast<uint32_t*>(out + x * kGroupBytes);
      if constexpr (kGroup == 2) {
        hn::StoreInterleaved2(load(0, x), load(1, x), d, words);
      } else {
        hn::StoreInterleaved4(load(0, x), load(1, x), load(2, x), load(3, x), d, words);
      }
    }
  }
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

// A group's horizontally resized pixels, s.group (column x's kGroup RGBX words at
// x * kGroupBytes), into the planes of rows `row` .. row + kGroup - 1 of s.rows.
void split_group(const ResampleJob& job, size_t row, size_t pitch, SimdScratch& s) {
  const uint8_t* rgbx[kGroup] = {s.group.data()};
  if constexpr (kGroup > 1) {
    const DU32 d;
    const size_t words = hwy::RoundUpTo(static_cast<size_t>(job.width), hn::Lanes(d));
    const uint32_t* in = reinterpret_cast<const uint32_t*>(s.group.data());
    uint32_t* out = reinterpret_cast<uint32_t*>(s.rgbx.data());
    for (size_t x = 0; x < words; x += hn::Lanes(d)) {
      hn::Vec<DU32> v[4];
      if constexpr (kGroup == 2) {
        hn::LoadInterleaved2(d, in + 2 * x, v[0], v[1]);
      } else {
        hn::LoadInterleaved4(d, in + 4 * x, v[0], v[1], v[2], v[3]);
      }
      for (size_t g = 0; g < kGroup; ++g) hn::StoreU(v[g], d, out + g * words + x);
    }
    for (size_t g = 0; g < kGroup; ++g) rgbx[g] = s.rgbx.data() + g * words * 4;
  }
  for (size_t g = 0; g < kGroup; ++g)
    to_planes(rgbx[g], job.width, pitch, &s.rows[(row + g) * 3 * pitch]);
}

// One row of one output plane: `width` (>= kLanes) values, each the taps' weighted sum of the
// plane rows at in, in + step, ..., flipped or not, converted (kFloat: v * scale + bias) and
// stored at `out`. Whole vectors; the last one ends at the row's end, overlapping.
template <bool kFloat>
void vertical_row(const uint8_t* HWY_RESTRICT in, size_t step, const int32_t* HWY_RESTRICT w,
                  int count, size_t width, bool flip, float scale, float bias,
                  uint8_t* HWY_RESTRICT out) {
  const D32 d;
  const DF df;
  const auto scale_v = hn::Set(df, scale), bias_v = hn::Set(df, bias);
  const size_t vectors = hwy::DivCeil(width, kLanes);
  for (size_t i = 0; i < vectors; ++i) {
    const size_t x = std::min(i * kLanes, width - kLanes);
    auto v = weighted_sum(in + x, step, w, count);
    size_t column = x;
    if (flip) {
      v = hn::Reverse(d, v);
      column = width - x - kLanes;
    }
    if constexpr (kFloat) {
      hn::StoreU(hn::Add(hn::Mul(hn::ConvertTo(df, v), scale_v), bias_v), df,
                 reinterpret_cast<float*>(out) + column);
    } else {
      hn::StoreU(to_bytes(v), D8(), out + column);
    }
  }
}

// The horizontal pass of one group of rows, from s.packed into s.group.
void horizontal_group(const AxisTaps& h, int column_begin, size_t width, SimdScratch& s) {
  const int32_t* HWY_RESTRICT first = h.first.data();
  const int32_t* HWY_RESTRICT count = h.count.data();
  const int32_t* HWY_RESTRICT weights = h.weights.data();
  const uint8_t* HWY_RESTRICT packed = s.packed.data();
  uint8_t* HWY_RESTRICT out = s.group.data();
  const size_t stride = static_cast<size_t>(h.stride);
  for (size_t x = 0; x < width; ++x) {
    const uint8_t* p = packed + static_cast<size_t>(first[x] - column_begin) * kGroupBytes;
    hn::StoreU(to_bytes(weighted_sum(p, kGroupBytes, weights + x * stride, count[x])), D8(),
               out + x * kGroupBytes);
  }
}

void Resample(const ResampleJob& job, SimdScratch& s) {
  const AxisTaps& h = *job.horizontal;
  const AxisTaps& v = *job.vertical;
  const int row_begin = v.source_begin(), row_end = v.source_end();
  const int column_begin = h.source_begin(), column_end = h.source_end();
  const size_t columns = static_cast<size_t>(column_end - column_begin);
  const size_t width = static_cast<size_t>(job.width);
  const size_t group_width = hwy::RoundUpTo(width, kLanes);  // whole vectors of words
  const size_t pitch = width;                                // of one plane's row
  const size_t row_count = hwy::RoundUpTo(static_cast<size_t>(row_end - row_begin), kGroup);
  s.packed.resize((columns + 1) * kGroupBytes);  // + the column after the last tap
  s.rgbx.resize(std::max(columns, group_width) * kGroupBytes);
  s.group.resize(group_width * kGroupBytes);
  s.rows.resize((row_count + 1) * 3 * pitch);  // + the row after the last tap

  // Horizontal pass, kGroup source rows at a time: each output pixel's kGroup RGBX words come
  // out interleaved, then go to the planes of their rows.
  for (int y = row_begin; y < row_end; y += static_cast<int>(kGroup)) {
    pack_group(job.src, y, row_end, column_begin, column_end, s);
    horizontal_group(h, column_begin, width, s);
    split_group(job, static_cast<size_t>(y - row_begin), pitch, s);
  }

  // Vertical pass, plane by plane, straight into the sample.
  const size_t row_step = 3 * pitch;  // from a plane's row to the same plane's next row
  const size_t element = job.to_float ? sizeof(float) : 1;
  for (int y = 0; y < job.height; ++y) {
    const uint8_t* rows = &s.rows[static_cast<size_t>(v.first[y] - row_begin) * row_step];
    const int32_t* w = &v.weights[static_cast<size_t>(y) * v.stride];
    for (int c = 0; c < 3; ++c) {
      const uint8_t* in = rows + c * pitch;
      if (width < kLanes) {  // narrower than a vector: one value at a time
        for (int x = 0; x < job.width; ++x) {
          const size_t at = static_cast<size_t>(y) * job.width + (job.flip ? job.width - 1 - x : x);
          write_value(job, c, at, filter_bytes(in + x, row_step, w, v.count[y]));
        }
        continue;
      }
      uint8_t* out = job.dst + ((static_cast<size_t>(c) * job.height + y) * width) * element;
      if (job.to_float) {
        vertical_row<true>(in, row_step, w, v.count[y], width, job.flip, job.scale[c], job.bias[c],
                           out);
      } else {
        vertical_row<false>(in, row_step, w, v.count[y], width, job.flip, 0, 0, out);
      }
    }
  }
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

void resample_simd(const ResampleJob& job, SimdScratch& scratch) {
  HWY_DYNAMIC_DISPATCH(Resample)(job, scratch);
}

const char* simd_target_name() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(Target)()); }

}  // namespace stoker::image
#endif  // HWY_ONCE
