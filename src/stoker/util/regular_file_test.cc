#include "stoker/util/regular_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// `path` is refused as kInvalidArgument with one line naming it and saying what it is.
void expect_refused(const std::string& path, const std::string& kind) {
  testing::HangGuard guard;
  Result<RegularFile> file = RegularFile::open(path);
  ASSERT_FALSE(file.is_ok()) << path;
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(file.status().message(), path + ": not a regular file (" + kind + ")");
}

TEST(RegularFileTest, OpensARegularFileWithItsSize) {
  testing::TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir / "f", "12345").is_ok());
  fs::create_symlink(dir / "f", dir / "link");
  for (const std::string& path : {dir / "f", dir / "link"}) {
    RegularFile file = RegularFile::open(path).value_or_throw();
    EXPECT_EQ(file.size(), 5u);
    char buffer[8];
    EXPECT_EQ(::read(file.fd(), buffer, sizeof buffer), 5) << "blocking reads work";
  }
}

TEST(RegularFileTest, RefusesWhatIsNotARegularFile) {
  testing::TempDir dir;
  testing::make_fifo(dir / "fifo");
  expect_refused(dir / "fifo", "a FIFO");
  expect_refused("/dev/zero", "a character device");
  expect_refused(dir.path(), "a directory");
  fs::create_symlink("/dev/zero", dir / "zero");
  expect_refused(dir / "zero", "a character device");
  fs::create_symlink(dir / "fifo", dir / "to-fifo");
  expect_refused(dir / "to-fifo", "a FIFO");
}

TEST(RegularFileTest, MissingIsNotFound) {
  testing::TempDir dir;
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  for (const std::string& path : {dir / "missing", dir / "dangling"}) {
    Result<RegularFile> file = RegularFile::open(path);
    ASSERT_FALSE(file.is_ok());
    EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
    EXPECT_EQ(file.status().message(), path + ": no such file");
  }
}

TEST(RegularFileTest, ReleaseHandsOverTheDescriptor) {
  testing::TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir / "f", "x").is_ok());
  int fd;
  {
    RegularFile file = RegularFile::open(dir / "f").value_or_throw();
    fd = file.release();
    EXPECT_EQ(file.fd(), -1);
  }
  char c;
  EXPECT_EQ(::read(fd, &c, 1), 1) << "the descriptor outlives the RegularFile";
  ::close(fd);
}

}  // namespace
}  // namespace stoker
