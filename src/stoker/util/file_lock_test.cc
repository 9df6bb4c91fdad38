#include "stoker/util/file_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

Result<FileLock> try_lock(const std::string& path, LockMode mode) {
  return FileLock::acquire(path, mode, /*wait=*/false, /*create=*/true);
}

TEST(FileLockTest, SharedHoldersTogetherAndExclusiveAlone) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/shard.lock";
  Result<FileLock> reader = try_lock(path, LockMode::kShared);
  ASSERT_TRUE(reader.is_ok()) << reader.status().message();
  EXPECT_TRUE(try_lock(path, LockMode::kShared).is_ok());
  Result<FileLock> writer = try_lock(path, LockMode::kExclusive);
  ASSERT_FALSE(writer.is_ok());
  EXPECT_EQ(writer.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(writer.status().message(), path + ": locked by another holder");

  FileLock moved(std::move(reader).value());  // the lock moves with the object
  EXPECT_FALSE(try_lock(path, LockMode::kExclusive).is_ok());
  moved = std::move(try_lock(dir.path() + "/other.lock", LockMode::kShared).value());
  EXPECT_TRUE(try_lock(path, LockMode::kExclusive).is_ok()) << "released when replaced";
}

TEST(FileLockTest, AMissingFileIsNotFoundUnlessCreated) {
  testing::TempDir dir;
  Result<FileLock> lock =
      FileLock::acquire(dir.path() + "/none", LockMode::kShared, false, /*create=*/false);
  ASSERT_FALSE(lock.is_ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(lock.status().message(), dir.path() + "/none: no such file");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/none"));
}

TEST(FileLockTest, StillAtSeesAnUnlinkedOrReplacedFile) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/shard";
  std::ofstream(path) << "a";
  FileLock lock = std::move(try_lock(path, LockMode::kShared).value());
  EXPECT_TRUE(lock.still_at(path));
  std::filesystem::rename(path, path + ".old");
  EXPECT_FALSE(lock.still_at(path));
  std::ofstream(path) << "b";
  EXPECT_FALSE(lock.still_at(path)) << "another file at the same name";
  EXPECT_TRUE(lock.still_at(path + ".old"));
}

// A process killed while holding an exclusive lock leaves it free: a waiter gets it at once.
TEST(FileLockTest, AKilledHoldersLockIsFreed) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/download.lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    Result<FileLock> held = try_lock(path, LockMode::kExclusive);
    char byte = held.is_ok() ? 'y' : 'n';
    (void)!::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 'y');
  EXPECT_EQ(try_lock(path, LockMode::kShared).status().code(), StatusCode::kAlreadyExists);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  Result<FileLock> after = FileLock::acquire(path, LockMode::kExclusive, /*wait=*/true, true);
  EXPECT_TRUE(after.is_ok()) << after.status().message();
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace stoker
