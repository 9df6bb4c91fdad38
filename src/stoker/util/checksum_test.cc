#include "stoker/util/checksum.h"

#include <gtest/gtest.h>

#include <string>

namespace stoker {
namespace {

TEST(ChecksumTest, KnownXxh3Value) {
  // XXH3-64 of the empty input, from the xxHash specification.
  EXPECT_EQ(xxh3_64("", 0), 0x2D06800538D394C2ull);
}

TEST(ChecksumTest, KnownXxh3128Value) {
  // XXH3-128 of the empty input, from the xxHash specification.
  const Hash128 empty = xxh3_128("", 0);
  EXPECT_EQ(empty.high, 0x99AA06D3014798D8ull);
  EXPECT_EQ(empty.low, 0x6001C324468D497Full);
}

TEST(ChecksumTest, AnyFlippedBitChangesTheChecksum) {
  std::string data(792, 'q');
  const uint64_t base = xxh3_64(data.data(), data.size());
  EXPECT_EQ(xxh3_64(data.data(), data.size()), base);
  for (size_t i = 0; i < data.size(); i += 37) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string copy = data;
      copy[i] ^= static_cast<char>(1 << bit);
      EXPECT_NE(xxh3_64(copy.data(), copy.size()), base) << i << ":" << bit;
    }
  }
}

}  // namespace
}  // namespace stoker
