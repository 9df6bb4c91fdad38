#include "stoker/store/import/idx.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "stoker/store/dataset.h"
#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

std::string idx_bytes(uint8_t type, std::vector<uint32_t> dims, const std::string& data) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return out + data;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// The value of `key` ("VmRSS:", "VmHWM:") in /proc/self/status, in bytes.
uint64_t proc_status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
  }
  return 0;
}

struct MeasuredRun {
  bool measured = false;  // the kernel let the child reset its peak (/proc/self/clear_refs)
  uint64_t peak_growth = 0;
  StatusCode code = StatusCode::kOk;
  std::string message;
};

// Runs `work` in a child process, which starts from the parent's memory: reports the Status it
// returned and how far the child's peak resident memory rose above what it held before. A
// measure of memory, not of time: other processes on the machine do not change it.
MeasuredRun run_measured(const std::function<Status()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const bool reset = static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5");
    const uint64_t before = proc_status_bytes("VmRSS:");
    const Status status = work();
    const uint64_t peak = proc_status_bytes("VmHWM:");
    std::ostringstream out;
    out << reset << ' ' << (peak > before ? peak - before : 0) << ' '
        << static_cast<int>(status.code()) << ' ' << status.message();
    const std::string text = out.str();
    const bool written = ::write(fds[1], text.data(), text.size()) == ssize_t(text.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  ::close(fds[0]);
  int wait_status = 0;
  ::waitpid(pid, &wait_status, 0);
  EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) << "the child failed";
  MeasuredRun run;
  int code = 0;
  std::istringstream in(text);
  in >> run.measured >> run.peak_growth >> code;
  run.code = static_cast<StatusCode>(code);
  std::getline(in >> std::ws, run.message);
  return run;
}

std::string pixels(int n, int rows, int cols) {
  std::string data(static_cast<size_t>(n) * rows * cols, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 % 251);
  return data;
}

class IdxTest : public ::testing::Test {
 protected:
  void write_pair(int n_images, int n_labels, bool gz) {
    std::string images = idx_bytes(0x08, {uint32_t(n_images), 3, 5}, pixels(n_images, 3, 5));
    std::string labels_data;
    for (int i = 0; i < n_labels; ++i) labels_data.push_back(static_cast<char>(i % 10));
    std::string labels = idx_bytes(0x08, {uint32_t(n_labels)}, labels_data);
    if (gz) {
      write_gz(images_path(), images);
      write_gz(labels_path(), labels);
    } else {
      ASSERT_TRUE(write_file_atomically(images_path(), images).is_ok());
      ASSERT_TRUE(write_file_atomically(labels_path(), labels).is_ok());
    }
  }
  std::string images_path() { return dir_ / "images.idx"; }
  std::string labels_path() { return dir_ / "labels.idx"; }
  Status import() {
    IdxImportOptions o;
    o.images = images_path();
    o.labels = labels_path();
    o.out = dir_ / "out";
    return import_idx(o).status();
  }
  void expect_error(const std::string& file, const std::string& words) {
    Status s = import();
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
    EXPECT_FALSE(fs::exists(dir_ / "out")) << "a failed import left output";
  }
  testing::TempDir dir_;
};

TEST_F(IdxTest, GzipAndRawImportTheSameRecords) {
  for (bool gz : {true, false}) {
    write_pair(37, 37, gz);
    ASSERT_TRUE(import().is_ok());
    auto ds = Dataset::open(dir_ / "out").value_or_throw();
    ASSERT_EQ(ds->size(), 37u);
    EXPECT_EQ(ds->schema().fields()[0].shape, (std::vector<int64_t>{1, 3, 5}));
    std::string expected = pixels(37, 3, 5);
    for (uint64_t i = 0; i < 37; ++i) {
      ASSERT_EQ(std::memcmp(ds->fixed_field(i, 0), expected.data() + i * 15, 15), 0);
      int64_t label;
      std::memcpy(&label, ds->fixed_field(i, 1), 8);
      ASSERT_EQ(label, static_cast<int64_t>(i % 10));
    }
    fs::remove_all(dir_ / "out");
  }
}

TEST_F(IdxTest, MissingFile) {
  write_pair(4, 4, true);
  fs::remove(labels_path());
  expect_error(labels_path(), "no such file");
}

TEST_F(IdxTest, WrongMagic) {
  write_pair(4, 4, false);
  ASSERT_TRUE(write_file_atomically(images_path(), "PK\x03\x04 this is a zip").is_ok());
  expect_error(images_path(), "bad magic");
}

TEST_F(IdxTest, UnsupportedDataType) {
  write_pair(4, 4, false);
  ASSERT_TRUE(write_file_atomically(labels_path(), idx_bytes(0x0D, {1}, "abcd")).is_ok());
  expect_error(labels_path(), "not supported");
}

TEST_F(IdxTest, CountMismatchNamesBothFiles) {
  write_pair(5, 4, true);
  expect_error(images_path(), "5 images");
  expect_error(labels_path(), "4 labels");
}

TEST_F(IdxTest, TruncatedData) {
  write_pair(4, 4, false);
  std::string bytes = read_file(images_path()).value_or_throw();
  ASSERT_TRUE(write_file_atomically(images_path(), bytes.substr(0, bytes.size() - 9)).is_ok());
  expect_error(images_path(), "truncated");
  ASSERT_TRUE(write_file_atomically(images_path(), bytes.substr(0, 6)).is_ok());
  expect_error(images_path(), "truncated");
}

TEST_F(IdxTest, TrailingBytes) {
  write_pair(4, 4, false);
  std::string bytes = read_file(labels_path()).value_or_throw();
  ASSERT_TRUE(write_file_atomically(labels_path(), bytes + "xx").is_ok());
  expect_error(labels_path(), "trailing");
}

TEST_F(IdxTest, CorruptGzipStream) {
  write_pair(40, 40, true);
  std::string bytes = read_file(images_path()).value_or_throw();
  for (size_t i = 20; i < bytes.size() - 8; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  ASSERT_TRUE(write_file_atomically(images_path(), bytes).is_ok());
  Status s = import();
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(images_path()), std::string::npos) << s.message();
}

TEST_F(IdxTest, HeaderPromisingMoreThanTheFileHoldsIsTruncatedNotAllocated) {
  // 2^32 - 1 images of 65535 x 65535 pixels (4 GiB each) in a file of a few hundred bytes:
  // buffers grow only as bytes arrive, so this costs kilobytes, not a bad_alloc.
  const uint32_t max = 0xffffffff;
  for (bool gz : {false, true}) {
    const std::string images = idx_bytes(0x08, {max, 65535, 65535}, pixels(1, 10, 10));
    const std::string labels = idx_bytes(0x08, {max}, std::string(300, '\1'));
    if (gz) {
      write_gz(images_path(), images);
    } else {
      ASSERT_TRUE(write_file_atomically(images_path(), images).is_ok());
    }
    ASSERT_TRUE(write_file_atomically(labels_path(), labels).is_ok());
    MeasuredRun run = run_measured([&] { return import(); });
    EXPECT_EQ(run.code, StatusCode::kCorrupt);
    EXPECT_EQ(run.message, images_path() +
                               ": truncated: header promises 18446181123756261375 data bytes, "
                               "file has 100");
    if (run.measured) {
      EXPECT_LT(run.peak_growth, uint64_t{16} << 20) << "gz " << gz;
    }
    EXPECT_FALSE(fs::exists(dir_ / "out"));
  }
  // The labels run out first when the images hold more.
  ASSERT_TRUE(
      write_file_atomically(images_path(), idx_bytes(0x08, {max, 2, 2}, std::string(400, 'x')))
          .is_ok());
  ASSERT_TRUE(write_file_atomically(labels_path(), idx_bytes(0x08, {max}, "ab")).is_ok());
  expect_error(labels_path(), "truncated: header promises 4294967295 data bytes, file has 2");
}

TEST_F(IdxTest, DimensionsThatDoNotFitAreRefusedNamingTheFile) {
  write_pair(4, 4, false);
  ASSERT_TRUE(write_file_atomically(images_path(), idx_bytes(0x08, {4, 0, 5}, "")).is_ok());
  expect_error(images_path(), "dimension out of range");
  ASSERT_TRUE(
      write_file_atomically(images_path(), idx_bytes(0x08, {4, 0x80000001, 5}, "")).is_ok());
  expect_error(images_path(), "dimension out of range");
  const std::vector<uint32_t> huge(8, 0xffffffff);
  ASSERT_TRUE(write_file_atomically(images_path(), idx_bytes(0x08, huge, "")).is_ok());
  expect_error(images_path(), "IDX dimensions multiply to more than 2^64 bytes");
}

TEST_F(IdxTest, InputThatIsNotAFileIsRefusedWithoutBlocking) {
  testing::HangGuard guard;
  write_pair(4, 4, true);
  fs::remove(labels_path());
  testing::make_fifo(labels_path());
  expect_error(labels_path(), "not a regular file (a FIFO)");
  fs::remove(images_path());
  fs::create_symlink("/dev/zero", images_path());
  expect_error(images_path(), "not a regular file (a character device)");
}

TEST_F(IdxTest, ImportStreamsWithMemoryBoundedByARecordNotTheInput) {
  // 65536 images of 32 x 32: 64 MiB inflated from a gzip of well under 1 MiB.
  constexpr uint32_t kImages = 65536, kSide = 32;
  constexpr uint64_t kInflated = uint64_t{kImages} * kSide * kSide;
  gzFile f = gzopen(images_path().c_str(), "wb1");
  const std::string header = idx_bytes(0x08, {kImages, kSide, kSide}, "");
  gzwrite(f, header.data(), static_cast<unsigned>(header.size()));
  const std::string chunk = pixels(1024, kSide, kSide);  // 1 MiB
  for (uint64_t done = 0; done < kInflated; done += chunk.size())
    gzwrite(f, chunk.data(), static_cast<unsigned>(chunk.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  std::string labels(kImages, '\0');
  for (uint32_t i = 0; i < kImages; ++i) labels[i] = static_cast<char>(i % 10);
  write_gz(labels_path(), idx_bytes(0x08, {kImages}, labels));
  ASSERT_LT(fs::file_size(images_path()), kInflated / 64);

  MeasuredRun run = run_measured([&] { return import(); });
  ASSERT_EQ(run.code, StatusCode::kOk) << run.message;
  if (!run.measured) GTEST_SKIP() << "/proc/self/clear_refs cannot reset the peak here";
  // Reading the whole input first, as the importer once did, takes at least kInflated.
  EXPECT_LT(run.peak_growth, kInflated / 4);
  auto ds = Dataset::open(dir_ / "out").value_or_throw();
  ASSERT_EQ(ds->size(), kImages);
  const uint64_t last = kImages - 1;
  EXPECT_EQ(std::memcmp(ds->fixed_field(last, 0), chunk.data() + (last % 1024) * kSide * kSide,
                        kSide * kSide),
            0);
}

TEST_F(IdxTest, ExistingOutputIsRefusedAndKept) {
  write_pair(4, 4, true);
  fs::create_directory(dir_ / "out");
  ASSERT_TRUE(write_file_atomically(dir_ / "out/keep", "precious").is_ok());
  Status s = import();
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(read_file(dir_ / "out/keep").value_or_throw(), "precious");
}

}  // namespace
}  // namespace stoker
