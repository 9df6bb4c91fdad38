#include "stoker/util/directory_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

TEST(DirectoryLockTest, OneHolderAtATimeAndNothingWritten) {
  testing::TempDir dir;
  {
    Result<DirectoryLock> first = DirectoryLock::acquire(dir.path(), "checkpoint directory");
    ASSERT_TRUE(first.is_ok()) << first.status().message();
    Result<DirectoryLock> second = DirectoryLock::acquire(dir.path(), "checkpoint directory");
    ASSERT_FALSE(second.is_ok());
    EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
    EXPECT_EQ(second.status().message(),
              "checkpoint directory '" + dir.path() +
                  "' is in use by another run (it holds the directory's lock); wait for it to end "
                  "or use another directory");

    // Another process is refused too, at once.
    const pid_t child = ::fork();
    if (child == 0) ::_exit(DirectoryLock::acquire(dir.path(), "x").is_ok() ? 0 : 3);
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_EQ(WEXITSTATUS(status), 3);

    DirectoryLock moved(std::move(first).value());  // the lock moves with it
    EXPECT_FALSE(DirectoryLock::acquire(dir.path(), "x").is_ok());
  }
  EXPECT_TRUE(DirectoryLock::acquire(dir.path(), "x").is_ok()) << "released on destruction";
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(DirectoryLockTest, NotADirectory) {
  testing::TempDir dir;
  Result<DirectoryLock> missing = DirectoryLock::acquire(dir / "none", "checkpoint directory");
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find(dir / "none"), std::string::npos);
}

}  // namespace
}  // namespace stoker
