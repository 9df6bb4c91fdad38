#include "stoker/util/mapped_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "stoker/testing/special_files.h"
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

TEST(MappedFileTest, OnlyARegularFileIsMapped) {
  testing::TempDir dir;
  testing::HangGuard guard;
  testing::make_fifo(dir / "fifo");
  std::filesystem::create_symlink("/dev/zero", dir / "zero");
  for (const std::string& path : {dir / "fifo", dir / "zero", dir.path()}) {
    auto file = MappedFile::open(path);
    ASSERT_FALSE(file.is_ok()) << path;
    EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(file.status().message().find(path + ": not a regular file"), std::string::npos)
        << file.status().message();
  }
}

}  // namespace
}  // namespace stoker
