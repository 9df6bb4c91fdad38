#include "stoker/util/checksum.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace stoker {
namespace {

TEST(ChecksumTest, KnownXxh64Values) {
  // Reference values of XXH64 with seed 0 (from the xxHash specification's test vectors).
  EXPECT_EQ(xxh64("", 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(xxh64("a", 1), 0xD24EC4F1A98C6E5Bull);
}

TEST(ChecksumTest, StreamingEqualsOneShotForAnySplit) {
  std::mt19937 rng(7);
  std::string data(10000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t split : {0ul, 1ul, 31ul, 32ul, 4999ul, 10000ul}) {
    StreamingXxh64 h;
    h.update(data.data(), split);
    h.update(data.data() + split, data.size() - split);
    EXPECT_EQ(h.digest(), xxh64(data.data(), data.size())) << split;
  }
}

TEST(ChecksumTest, AnyFlippedBitChangesTheChecksum) {
  std::string data(792, 'q');
  const uint64_t base = xxh64(data.data(), data.size());
  for (size_t i = 0; i < data.size(); i += 37) {
    std::string copy = data;
    copy[i] ^= 1;
    EXPECT_NE(xxh64(copy.data(), copy.size()), base) << i;
  }
}

}  // namespace
}  // namespace stoker
