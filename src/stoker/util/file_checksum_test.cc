#include "stoker/util/file_checksum.h"

#include <gtest/gtest.h>

#include <string>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

TEST(FileChecksumTest, IsTheChecksumOfTheFilesBytesInPieces) {
  testing::TempDir dir;
  std::string bytes;
  for (int i = 0; i < 200'000; ++i) bytes += static_cast<char>(i * 7 % 251);  // several pieces
  ASSERT_TRUE(write_file_atomically(dir / "f", bytes).is_ok());
  EXPECT_EQ(file_checksum(dir / "f").value_or_throw(), xxh3_64(bytes.data(), bytes.size()));
  ASSERT_TRUE(write_file_atomically(dir / "empty", "").is_ok());
  EXPECT_EQ(file_checksum(dir / "empty").value_or_throw(), xxh3_64("", 0));
}

TEST(FileChecksumTest, AMissingFileOrADirectoryIsNamed) {
  testing::TempDir dir;
  const Result<uint64_t> missing = file_checksum(dir / "missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), dir / "missing" + ": no such file");
  EXPECT_EQ(file_checksum(dir.path()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
