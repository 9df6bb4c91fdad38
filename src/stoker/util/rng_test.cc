#include "stoker/util/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

namespace stoker {
namespace {

// Pearson's chi-square statistic of `counts` against a uniform expectation.
double chi_square(const std::vector<int64_t>& counts, int64_t total) {
  const double expected = static_cast<double>(total) / counts.size();
  double chi = 0;
  for (int64_t c : counts) chi += (c - expected) * (c - expected) / expected;
  return chi;
}

TEST(RngTest, Mix64MatchesPublishedSplitMix64Outputs) {
  // SplitMix64 seeded with 1234567 (Rosetta Code "Pseudo-random numbers/Splitmix64"):
  // output i is mix64(1234567 + i * kGolden).
  const uint64_t expected[] = {6457827717110365317ULL, 3203168211198807973ULL,
                               9817491932198370423ULL, 4593380528125082431ULL,
                               16408922859458223821ULL};
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(mix64(1234567 + (i + 1) * kGolden), expected[i]);
}

TEST(RngTest, SeedZeroStreamZeroIsSplitMix64FromStateZero) {
  // mix64(0) == 0, so key(0, 0) == 0 and the stream is SplitMix64 seeded with 0.
  EXPECT_EQ(stream_key(0, 0), 0u);
  EXPECT_EQ(random_at(0, 0, 0), 0xe220a8397b1dcdafULL);
}

TEST(RngTest, CursorMatchesPureFunction) {
  CounterRng rng(42, 7);
  for (uint64_t c = 0; c < 100; ++c) EXPECT_EQ(rng.next_u64(), random_at(42, 7, c));
  EXPECT_EQ(rng.counter(), 100u);
  CounterRng resumed(42, 7, 50);
  EXPECT_EQ(resumed.next_u64(), random_at(42, 7, 50));
}

TEST(RngTest, DeterministicAcrossInstances) {
  CounterRng a(123, 9), b(123, 9);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(a.next_u64(), b.next_u64());
    EXPECT_EQ(a.uniform_below(1000), b.uniform_below(1000));
    EXPECT_EQ(a.next_float(), b.next_float());
    EXPECT_EQ(a.next_double(), b.next_double());
  }
}

TEST(RngTest, DifferentStreamsAndSeedsDiffer) {
  std::set<uint64_t> firsts;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    for (uint64_t stream = 0; stream < 16; ++stream) {
      firsts.insert(random_at(seed, stream, 0));
      // Sequences are not shifted copies of each other within a short window.
      int equal = 0;
      for (uint64_t c = 0; c < 64; ++c) {
        equal += random_at(seed, stream, c) == random_at(seed, stream + 1, c);
      }
      EXPECT_EQ(equal, 0);
    }
  }
  EXPECT_EQ(firsts.size(), 256u);
}

TEST(RngTest, DerivedStreamsAreDistinct) {
  std::set<uint64_t> streams;
  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    streams.insert(order_stream(epoch));
    for (int64_t index = 0; index < 500; ++index) {
      streams.insert(sample_stream(epoch, index));
      for (int64_t repeat = 1; repeat < 4; ++repeat)
        streams.insert(sample_stream(epoch, index, repeat));
    }
  }
  EXPECT_EQ(streams.size(), 20u + 20u * 500u * 4u);
  EXPECT_EQ(sample_stream(3, 17), sample_stream(3, 17));
  EXPECT_EQ(sample_stream(3, 17, 0), sample_stream(3, 17));  // repeat 0 is the sample's stream
}

TEST(RngTest, Next64BitsAreRoughlyUniform) {
  // Each of the 64 bits is set about half the time, and the top byte fills 256 buckets evenly.
  CounterRng rng(7, 0);
  constexpr int64_t kDraws = 200000;
  std::vector<int64_t> bit_counts(64, 0), buckets(256, 0);
  for (int64_t i = 0; i < kDraws; ++i) {
    const uint64_t x = rng.next_u64();
    for (int bit = 0; bit < 64; ++bit) bit_counts[bit] += (x >> bit) & 1;
    ++buckets[x >> 56];
  }
  for (int64_t c : bit_counts) EXPECT_NEAR(c, kDraws / 2, 2000);  // ~9 standard deviations
  // 255 degrees of freedom: mean 255, sd ~22.6; 400 is far in the tail.
  EXPECT_LT(chi_square(buckets, kDraws), 400.0);
}

TEST(RngTest, UniformBelowStaysInRangeAndIsUniform) {
  CounterRng rng(11, 3);
  for (uint64_t n : {1ULL, 2ULL, 7ULL, 10ULL, 1000ULL}) {
    std::vector<int64_t> counts(n, 0);
    const int64_t draws = 2000 * static_cast<int64_t>(n);
    for (int64_t i = 0; i < draws; ++i) {
      const uint64_t x = rng.uniform_below(n);
      ASSERT_LT(x, n);
      ++counts[x];
    }
    if (n > 1) {
      // Generous bound: mean n-1, sd sqrt(2(n-1)).
      EXPECT_LT(chi_square(counts, draws), (n - 1) + 8.0 * std::sqrt(2.0 * (n - 1)) + 10) << n;
    }
  }
}

TEST(RngTest, UniformBelowHasNoModuloBias) {
  // With n = 3 * 2^62, `x % n` would return a value below 2^62 with probability 1/2; the unbiased
  // answer is 1/3.
  const uint64_t n = 3ULL << 62;
  CounterRng rng(5, 5);
  constexpr int kDraws = 60000;
  int low = 0;
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t x = rng.uniform_below(n);
    ASSERT_LT(x, n);
    low += x < (1ULL << 62);
  }
  EXPECT_NEAR(static_cast<double>(low) / kDraws, 1.0 / 3.0, 0.01);  // sd ~0.0019
}

TEST(RngTest, UniformBelowRejectionConsumesExtraDraws) {
  // For n = 2^63 + 1 about half the products fall below the threshold and are redrawn, so the
  // counter must advance by more than one draw per call on average.
  const uint64_t n = (1ULL << 63) + 1;
  CounterRng rng(1, 1);
  for (int i = 0; i < 1000; ++i) ASSERT_LT(rng.uniform_below(n), n);
  EXPECT_GT(rng.counter(), 1500u);
  EXPECT_LT(rng.counter(), 2500u);
}

TEST(RngTest, NextFloatInUnitIntervalAndUniform) {
  CounterRng rng(2, 8);
  constexpr int64_t kDraws = 100000;
  std::vector<int64_t> buckets(100, 0);
  double sum = 0;
  for (int64_t i = 0; i < kDraws; ++i) {
    const float f = rng.next_float();
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    sum += f;
    ++buckets[static_cast<int>(f * 100)];
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.01);
  EXPECT_LT(chi_square(buckets, kDraws), 99 + 8 * std::sqrt(2.0 * 99));
}

TEST(RngTest, NextDoubleIsTheTop53BitsOfTheWord) {
  CounterRng rng(4, 6);
  for (uint64_t c = 0; c < 1000; ++c) {
    const double d = rng.next_double();
    ASSERT_EQ(d, std::ldexp(static_cast<double>(random_at(4, 6, c) >> 11), -53));
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

TEST(RngTest, NextDoubleIsUniformAndUsesTheLowBits) {
  CounterRng rng(3, 9);
  constexpr int64_t kDraws = 100000;
  std::vector<int64_t> buckets(100, 0);
  double sum = 0;
  int64_t finer_than_float = 0;  // values that are not multiples of 2^-24
  for (int64_t i = 0; i < kDraws; ++i) {
    const double d = rng.next_double();
    sum += d;
    ++buckets[static_cast<int>(d * 100)];
    finer_than_float += std::ldexp(d, 24) != std::floor(std::ldexp(d, 24));
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.01);
  EXPECT_LT(chi_square(buckets, kDraws), 99 + 8 * std::sqrt(2.0 * 99));
  EXPECT_GT(finer_than_float, kDraws * 99 / 100);
}

}  // namespace
}  // namespace stoker
