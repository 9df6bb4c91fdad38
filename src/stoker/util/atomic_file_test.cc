#include "stoker/util/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

TEST(AtomicFileTest, CommitMakesTheFileAppearWithAllBytes) {
  testing::TempDir dir;
  const std::string path = dir / "out.bin";
  auto file = AtomicFile::create(path).value_or_throw();
  std::string big(3 << 20, 'x');  // larger than the write buffer
  ASSERT_TRUE(file.append("head", 4).is_ok());
  ASSERT_TRUE(file.append(big.data(), big.size()).is_ok());
  EXPECT_FALSE(fs::exists(path)) << "visible before commit";
  ASSERT_TRUE(file.commit().is_ok());
  auto text = read_file(path).value_or_throw();
  EXPECT_EQ(text, "head" + big);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(AtomicFileTest, DestroyedWithoutCommitLeavesNothing) {
  testing::TempDir dir;
  {
    auto file = AtomicFile::create(dir / "out.bin").value_or_throw();
    ASSERT_TRUE(file.append("abc", 3).is_ok());
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(AtomicFileTest, CommitReplacesAnOldFileWhole) {
  testing::TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir / "f", "old contents").is_ok());
  ASSERT_TRUE(write_file_atomically(dir / "f", "new").is_ok());
  EXPECT_EQ(read_file(dir / "f").value_or_throw(), "new");
}

TEST(AtomicFileTest, MissingDirectoryIsAnIoErrorNamingThePath) {
  testing::TempDir dir;
  auto file = AtomicFile::create(dir / "no/such/dir/f");
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), StatusCode::kIoError);
  EXPECT_NE(file.status().message().find("no/such/dir/f"), std::string::npos);
}

TEST(ReadFileTest, MissingFileIsNotFound) {
  testing::TempDir dir;
  EXPECT_EQ(read_file(dir / "nope").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace stoker
