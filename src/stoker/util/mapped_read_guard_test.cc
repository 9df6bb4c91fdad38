#include "stoker/util/mapped_read_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/mapped_file.h"

namespace stoker {
namespace {

// Reads the byte at `p` (volatile: a real load, which the compiler cannot drop).
int byte_at(const uint8_t* p) { return *static_cast<const volatile uint8_t*>(p); }

// A mapped file of three pages of 'x', then truncated to one page: its mapping runs two pages
// past the file's end.
struct ShrunkFile {
  ShrunkFile() {
    EXPECT_TRUE(write_file_atomically(path, std::string(3 * page, 'x')).is_ok());
    file = MappedFile::open(path).value_or_throw();
    EXPECT_EQ(::truncate(path.c_str(), static_cast<off_t>(page)), 0);
  }
  testing::TempDir dir;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const std::string path = dir / "shard.stk";
  MappedFile file;
};

TEST(MappedReadGuardTest, AGuardedReadPastTheNewEndReadsZerosAndNamesTheFile) {
  install_mapped_read_fault_handler();
  install_mapped_read_fault_handler();  // idempotent
  ShrunkFile shrunk;
  const uint8_t* data = shrunk.file.data();
  EXPECT_FALSE(mapped_file_changed(shrunk.file.data()));
  {
    MappedReadGuard guard;
    EXPECT_EQ(guard.changed_file(), "");
    EXPECT_EQ(byte_at(data + 0), 'x');  // before the new end: the file's bytes
    EXPECT_EQ(byte_at(data + 2 * shrunk.page + 5), 0);
    EXPECT_EQ(guard.changed_file(), shrunk.path);
    {
      MappedReadGuard nested;  // a fault while nested is reported to both
      EXPECT_EQ(byte_at(data + shrunk.page + 1), 0);
      EXPECT_EQ(nested.changed_file(), shrunk.path);
    }
  }
  EXPECT_TRUE(any_mapped_file_changed());
  EXPECT_TRUE(mapped_file_changed(shrunk.file.data()));
  EXPECT_TRUE(mapped_file_changed(shrunk.file.data() + 3 * shrunk.page - 1));
  // Another thread reads the replaced pages without a fault, and sees the file marked changed.
  std::thread([&] {
    MappedReadGuard guard;
    EXPECT_EQ(byte_at(data + 2 * shrunk.page), 0);
    EXPECT_EQ(guard.changed_file(), "");
    EXPECT_TRUE(mapped_file_changed(shrunk.file.data()));
  }).join();
  shrunk.file = MappedFile();  // unmapped: no longer counted
  EXPECT_FALSE(any_mapped_file_changed());
}

// Faults the handler does not take go to the handler installed before it. Death tests run in a
// fresh process ("threadsafe"), whose first install saves exit_three as the previous handler.
void exit_three(int) { ::_exit(3); }

// Installs `previous`, then stoker's handler over it, then reads a page past a shrunk file's end
// outside any guard.
void fault_unguarded_over(void (*previous)(int)) {
  ::signal(SIGBUS, previous);
  install_mapped_read_fault_handler();
  ShrunkFile shrunk;
  byte_at(shrunk.file.data() + 2 * shrunk.page);
}

TEST(MappedReadGuardDeathTest, AnUnguardedFaultGoesToThePreviousHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_unguarded_over(exit_three), ::testing::ExitedWithCode(3), "");
}

TEST(MappedReadGuardDeathTest, AFaultOutsideStokersMappingsGoesToThePreviousHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::signal(SIGBUS, exit_three);
        install_mapped_read_fault_handler();
        testing::TempDir dir;
        const std::string path = dir / "other";
        const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
        EXPECT_TRUE(write_file_atomically(path, std::string(2 * page, 'x')).is_ok());
        const int fd = ::open(path.c_str(), O_RDONLY);
        const auto* data = static_cast<const uint8_t*>(
            ::mmap(nullptr, 2 * page, PROT_READ, MAP_SHARED, fd, 0));  // not a MappedFile
        EXPECT_EQ(::ftruncate(::open(path.c_str(), O_WRONLY), 0), 0);
        MappedReadGuard guard;
        byte_at(data + page);
      },
      ::testing::ExitedWithCode(3), "");
}

// A handler installed over ours (as faulthandler.enable() after `import stoker` does): the next
// install puts ours back on top, chained to it.
TEST(MappedReadGuardDeathTest, AnInstallAfterAnotherHandlerPutsOursBackOnTop) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_mapped_read_fault_handler();
        ::signal(SIGBUS, exit_three);
        install_mapped_read_fault_handler();
        ShrunkFile shrunk;
        {
          MappedReadGuard guard;
          if (byte_at(shrunk.file.data() + 2 * shrunk.page) != 0) ::_exit(4);
        }
        byte_at(shrunk.file.data() + 2 * shrunk.page - 1);  // recovered: zeros
        ShrunkFile other;
        byte_at(other.file.data() + 2 * other.page);  // unguarded: exit_three
      },
      ::testing::ExitedWithCode(3), "");
}

// What faulthandler does once it has put back the handler it replaced (ours): raise again.
void hand_back(int number) { ::raise(number); }

TEST(MappedReadGuardDeathTest, AHandlerThatHandsTheSignalBackEndsTheProcessNotALoop) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_unguarded_over(hand_back), ::testing::KilledBySignal(SIGBUS), "");
}

}  // namespace
}  // namespace stoker
