#include "stoker/util/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "stoker/testing/special_files.h"
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

// Only a new path or a regular file is written: a rename over a device (as root, /dev/full), a
// FIFO, a directory or a link would replace it.
TEST(AtomicFileTest, RefusesTargetsThatAreNotRegularFiles) {
  testing::TempDir dir;
  testing::make_fifo(dir / "fifo");
  std::filesystem::create_directory(dir / "sub");
  ASSERT_TRUE(write_file_atomically(dir / "regular", "x").is_ok());
  std::filesystem::create_symlink(dir / "regular", dir / "link");
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"/dev/full", "a character device"},
      {dir / "fifo", "a FIFO"},
      {dir / "sub", "a directory"},
      {dir / "link", "a symbolic link"}};
  for (const auto& [path, kind] : refused) {
    Status s = check_output_path(path);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << path;
    EXPECT_EQ(
        s.message(),
        path + ": " + kind + ", not a regular file: give a new path or a regular file to replace");
    EXPECT_EQ(write_file_atomically(path, "model").code(), StatusCode::kInvalidArgument) << path;
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/full was replaced";
  EXPECT_EQ(read_file(dir / "regular").value_or_throw(), "x");
  EXPECT_TRUE(check_output_path(dir / "regular").is_ok());
  EXPECT_TRUE(check_output_path(dir / "new").is_ok());
  EXPECT_EQ(check_output_path(dir / "none/new").code(), StatusCode::kIoError);
}

TEST(AtomicFileTest, TemporariesOfKilledWritersAreRemovedByTheNextOne) {
  testing::TempDir dir;
  // A pid that runs (this one's parent) and one that no longer does (a reaped child).
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  const std::string stale = dir / ("f.tmp-" + std::to_string(gone));
  const std::string numbered = dir / ("f.tmp-" + std::to_string(gone) + ".3");
  const std::string live = dir / ("f.tmp-" + std::to_string(::getppid()) + ".0");
  const std::string other = dir / "g.tmp-1x";  // not a temporary of f: never touched
  for (const std::string& p : {stale, numbered, live, other})
    ASSERT_TRUE(write_file_atomically(p, "").is_ok());
  ASSERT_TRUE(write_file_atomically(dir / "f", "new").is_ok());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(numbered));
  EXPECT_TRUE(fs::exists(live)) << "a running writer's temporary stays";
  EXPECT_TRUE(fs::exists(other));
}

TEST(AtomicFileTest, ThreadsWritingOneFileAtOnceEachSucceed) {
  testing::TempDir dir;
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i)
        failed += !write_file_atomically(dir / "f", std::to_string(t)).is_ok();
    });
  for (std::thread& writer : writers) writer.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
      << "no temporary left";
}

TEST(AtomicFileTest, CheckWritableProvesTheDirectoryTakesAFileAndLeavesNothing) {
  testing::TempDir dir;
  EXPECT_TRUE(check_writable(dir / "out.json").is_ok());
  EXPECT_TRUE(fs::is_empty(dir.path()));
  EXPECT_EQ(check_writable(dir / "missing/out.json").code(), StatusCode::kIoError);
  fs::create_directory(dir / "ro");
  ::chmod((dir / "ro").c_str(), 0555);
  const bool root_ignores_modes = ::geteuid() == 0;  // root writes anywhere
  const Status read_only = check_writable(dir / "ro/out.json");
  ::chmod((dir / "ro").c_str(), 0755);
  if (!root_ignores_modes) {
    EXPECT_EQ(read_only.code(), StatusCode::kIoError);
    EXPECT_NE(read_only.message().find(dir / "ro/out.json"), std::string::npos);
  }
  EXPECT_TRUE(fs::is_empty(dir / "ro"));
}

TEST(ReadFileTest, MissingFileIsNotFound) {
  testing::TempDir dir;
  EXPECT_EQ(read_file(dir / "nope").status().code(), StatusCode::kNotFound);
}

TEST(ReadFileTest, FifoAndDeviceAreRefusedWithoutReading) {
  testing::TempDir dir;
  testing::HangGuard guard;
  testing::make_fifo(dir / "fifo");
  std::filesystem::create_symlink("/dev/zero", dir / "zero");
  for (const std::string& path : {dir / "fifo", dir / "zero", std::string("/dev/zero")}) {
    Result<std::string> text = read_file(path);
    ASSERT_FALSE(text.is_ok()) << path;
    EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(text.status().message().find(path + ": not a regular file"), std::string::npos)
        << text.status().message();
  }
}

TEST(ReadFileTest, FileOverTheLimitIsRefusedBeforeReading) {
  testing::TempDir dir;
  // A sparse file: its size is known from the start, and reading it would take seconds.
  std::filesystem::path big = dir / "big";
  ASSERT_TRUE(write_file_atomically(big, "").is_ok());
  std::filesystem::resize_file(big, uint64_t{8} << 30);
  Result<std::string> text = read_file(big, 1000);
  ASSERT_FALSE(text.is_ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            big.string() + ": larger than 1000 bytes, the limit for this file");
  EXPECT_EQ(read_file(big).status().code(), StatusCode::kInvalidArgument) << "default limit";

  ASSERT_TRUE(write_file_atomically(dir / "f", std::string(1000, 'x')).is_ok());
  EXPECT_EQ(read_file(dir / "f", 1000).value_or_throw().size(), 1000u) << "the limit is inclusive";
  EXPECT_FALSE(read_file(dir / "f", 999).is_ok());
}

TEST(ReadFileTest, FileWithoutASizeStopsAtTheLimit) {
  // /proc files report size 0 but hold more: the limit applies to what is read.
  EXPECT_GT(read_file("/proc/self/status").value_or_throw().size(), 100u);
  Result<std::string> text = read_file("/proc/self/status", 100);
  ASSERT_FALSE(text.is_ok());
  EXPECT_NE(text.status().message().find("larger than 100 bytes"), std::string::npos);
}

}  // namespace
}  // namespace stoker
