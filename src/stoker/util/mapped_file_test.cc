#include "stoker/util/mapped_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

TEST(MappedFileTest, MapsTheWholeFile) {
  testing::TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir / "f", "hello mmap").is_ok());
  MappedFile file = MappedFile::open(dir / "f").value_or_throw();
  ASSERT_EQ(file.size(), 10u);
  EXPECT_EQ(std::memcmp(file.data(), "hello mmap", 10), 0);
  MappedFile moved = std::move(file);
  EXPECT_EQ(moved.size(), 10u);
  EXPECT_EQ(file.size(), 0u);  // NOLINT: moved-from is empty by contract
}

TEST(MappedFileTest, EmptyFileMapsToNothing) {
  testing::TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir / "empty", "").is_ok());
  MappedFile file = MappedFile::open(dir / "empty").value_or_throw();
  EXPECT_EQ(file.size(), 0u);
  EXPECT_EQ(file.data(), nullptr);
}

TEST(MappedFileTest, MissingFileIsNotFoundNamingIt) {
  testing::TempDir dir;
  auto file = MappedFile::open(dir / "missing");
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_NE(file.status().message().find("missing"), std::string::npos);
}

}  // namespace
}  // namespace stoker
