#pragma once
// Counter-based random numbers (docs/DESIGN.md contract 1). Every draw is a pure function of
// (seed, stream, counter): no hidden state, so any thread, worker or process recomputes the same
// draw from the same three words, whatever the worker count or timing.
//
// The algorithm (cited by the docs; changing it changes every shuffled order and augmentation):
//   mix64(z)  the SplitMix64 finalizer (Steele, Lea & Flood 2014, constants from Vigna):
//               z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
//               z = (z ^ (z >> 27)) * 0x94d049bb133111eb
//               return z ^ (z >> 31)                       (all arithmetic mod 2^64)
//   key(seed, stream)                 = mix64(mix64(seed) ^ stream)
//   random_at(seed, stream, counter)  = mix64(key(seed, stream) + (counter + 1) * kGolden)
//               with kGolden = 0x9e3779b97f4a7c15.
// So each (seed, stream) is a SplitMix64 sequence whose state starts at key(seed, stream), and
// random_at(..., n) is its (n+1)-th output. For a fixed seed, distinct streams have distinct
// keys (mix64 is a bijection); two streams' sequences overlap within L draws only with
// probability about 2L / 2^64. SplitMix64 passes BigCrush.
//
// Streams are derived from their purpose so that the uses never share a sequence:
//   derive_stream(a, b)          = mix64(mix64(a) + b)
//   order_stream(epoch)          = derive_stream(kOrderTag, epoch)
//   shard_order_stream(epoch)    = derive_stream(kShardOrderTag, epoch)
//   window_stream(epoch)         = derive_stream(kWindowTag, epoch)
//   mixture_stream(epoch)        = derive_stream(kMixtureTag, epoch)
//   part_order_stream(part, part_epoch)
//                                = derive_stream(derive_stream(kPartOrderTag, part), part_epoch)
//   sample_stream(epoch, index)  = derive_stream(derive_stream(kSampleTag, epoch), index)
//   sample_stream(epoch, index, repeat), repeat >= 1 (repeated augmentation, sampler.h)
//                                = derive_stream(derive_stream(kRepeatTag, repeat),
//                                                sample_stream(epoch, index))
//   operation k >= 1 of a field  = derive_stream(the sample's stream, k)
//                                  (SampleInput::step, pipeline/transform.h)
//   operation j of a combinator that is step s: step derive_stream(s, j + 1)
//                                  (pipeline/ops/combinator.h)
//   batch_stream(epoch, position, rank)
//                                = derive_stream(derive_stream(derive_stream(kBatchTag, epoch),
//                                  position), rank)   (a batch transform's, batch_transform.h)
// where kOrderTag = 0x6f72646572 ("order"), kShardOrderTag = 0x736861726473 ("shards"),
// kWindowTag = 0x77696e646f77 ("window"), kSampleTag = 0x73616d706c65 ("sample"),
// kRepeatTag = 0x726570656174 ("repeat"), kBatchTag = 0x6261746368 ("batch"), kMixtureTag =
// 0x6d697874757265 ("mixture") and kPartOrderTag = 0x7061727473 ("parts"); epochs
// and indices are converted to uint64 by two's complement. For a fixed first argument
// derive_stream is a bijection in its second, so distinct epochs (or distinct samples of one
// epoch) always get distinct streams.
//
// CounterRng walks one stream with a counter:
//   next_u64()        random_at(seed, stream, counter++)
//   uniform_below(n)  Lemire's multiply-shift with rejection (ACM TOMS 2019), no modulo bias:
//                       m = next_u64() * n (128-bit product); l = low 64 bits of m
//                       if l < n: t = (2^64 - n) mod n; while l < t: m = next_u64() * n, l = ...
//                       return high 64 bits of m
//   next_float()      (next_u64() >> 40) * 2^-24, a multiple of 2^-24 in [0, 1)
//   next_double()     (next_u64() >> 11) * 2^-53, a multiple of 2^-53 in [0, 1)

#include <cassert>
#include <cstdint>

namespace stoker {

inline constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
inline constexpr uint64_t kOrderTag = 0x6f72646572ULL;         // "order"
inline constexpr uint64_t kSampleTag = 0x73616d706c65ULL;      // "sample"
inline constexpr uint64_t kShardOrderTag = 0x736861726473ULL;  // "shards"
inline constexpr uint64_t kWindowTag = 0x77696e646f77ULL;      // "window"
inline constexpr uint64_t kRepeatTag = 0x726570656174ULL;      // "repeat"
inline constexpr uint64_t kBatchTag = 0x6261746368ULL;         // "batch"
inline constexpr uint64_t kMixtureTag = 0x6d697874757265ULL;   // "mixture"
inline constexpr uint64_t kPartOrderTag = 0x7061727473ULL;     // "parts"

// The SplitMix64 finalizer: a bijection on uint64 with good avalanche.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The SplitMix64 starting state of (seed, stream).
constexpr uint64_t stream_key(uint64_t seed, uint64_t stream) {
  return mix64(mix64(seed) ^ stream);
}

// The random word number `counter` of stream `stream` under `seed`; a pure function.
constexpr uint64_t random_at(uint64_t seed, uint64_t stream, uint64_t counter) {
  return mix64(stream_key(seed, stream) + (counter + 1) * kGolden);
}

// A child stream id of `a` numbered `b`; a bijection in `b` for fixed `a`.
constexpr uint64_t derive_stream(uint64_t a, uint64_t b) { return mix64(mix64(a) + b); }

// The stream of the sampler's shuffled order of epoch `epoch`.
constexpr uint64_t order_stream(int64_t epoch) {
  return derive_stream(kOrderTag, static_cast<uint64_t>(epoch));
}

// The stream of the shard-window shuffle's permutation of the shards in epoch `epoch`.
constexpr uint64_t shard_order_stream(int64_t epoch) {
  return derive_stream(kShardOrderTag, static_cast<uint64_t>(epoch));
}

// The stream of the shard-window shuffle's per-record draws in epoch `epoch` (counter: the
// record's dataset index).
constexpr uint64_t window_stream(int64_t epoch) {
  return derive_stream(kWindowTag, static_cast<uint64_t>(epoch));
}

// The stream of a mixture's interleaving of its parts in epoch `epoch`
// (pipeline/orders/mixture.cc).
constexpr uint64_t mixture_stream(int64_t epoch) {
  return derive_stream(kMixtureTag, static_cast<uint64_t>(epoch));
}

// The stream of a mixture's own order of part `part` in that part's epoch `part_epoch` (a part
// runs through its epochs at its own pace).
constexpr uint64_t part_order_stream(int64_t part, int64_t part_epoch) {
  return derive_stream(derive_stream(kPartOrderTag, static_cast<uint64_t>(part)),
                       static_cast<uint64_t>(part_epoch));
}

// The stream of per-sample randomness (augmentation) of dataset index `sample_index` in epoch
// `epoch`; independent of which worker, rank or batch handles the sample.
constexpr uint64_t sample_stream(int64_t epoch, int64_t sample_index) {
  return derive_stream(derive_stream(kSampleTag, static_cast<uint64_t>(epoch)),
                       static_cast<uint64_t>(sample_index));
}

// The stream of repeat `repeat` of a sample that an epoch's order holds several times
// (SamplerOptions::repeats): repeat 0 is sample_stream(epoch, sample_index), each other repeat a
// stream of its own, so every repeat draws its own augmentation.
constexpr uint64_t sample_stream(int64_t epoch, int64_t sample_index, int64_t repeat) {
  const uint64_t stream = sample_stream(epoch, sample_index);
  return repeat == 0
             ? stream
             : derive_stream(derive_stream(kRepeatTag, static_cast<uint64_t>(repeat)), stream);
}

// The stream of a batch transform's randomness (MixUp, CutMix) for the batch of rank `rank` that
// ends at global position `position` of epoch `epoch` (the loader's position once it is
// consumed): independent of the worker that builds it, the same after a resume.
constexpr uint64_t batch_stream(int64_t epoch, int64_t position, int64_t rank) {
  return derive_stream(derive_stream(derive_stream(kBatchTag, static_cast<uint64_t>(epoch)),
                                     static_cast<uint64_t>(position)),
                       static_cast<uint64_t>(rank));
}

// A cursor over one stream: draw i is random_at(seed, stream, first_counter + i). A small value
// type; copies continue independently from the same point. Not thread-safe (each thread uses
// its own; two cursors over the same stream and counter yield the same draws).
class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream, uint64_t counter = 0)
      : key_(stream_key(seed, stream)), counter_(counter) {}

  // The next 64 random bits.
  uint64_t next_u64() { return mix64(key_ + (++counter_) * kGolden); }

  // Uniform integer in [0, n) without modulo bias (Lemire). Precondition: n > 0. Consumes one
  // draw, rarely more.
  uint64_t uniform_below(uint64_t n) {
    assert(n > 0);
    unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next_u64()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform float in [0, 1) with 24 random bits (every value is exactly representable).
  float next_float() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

  // Uniform double in [0, 1) with 53 random bits (every value is exactly representable).
  double next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  // The number of the next draw: the constructor's `counter` plus the draws consumed.
  uint64_t counter() const { return counter_; }

 private:
  uint64_t key_;
  uint64_t counter_;
};

}  // namespace stoker
