// CIFAR-10 import from tiny files of the binary version's format.
#include "stoker/store/import/cifar10.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "stoker/store/dataset.h"
#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

const char* kNames = "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";

// The bytes of record `i` of file `file`: label (i * 3 + file) % 10, pixels from both.
std::string record(int file, int i) {
  std::string bytes(kCifar10RecordBytes, '\0');
  bytes[0] = static_cast<char>((i * 3 + file) % 10);
  for (size_t p = 1; p < bytes.size(); ++p) bytes[p] = static_cast<char>(p * 31 + i * 7 + file);
  return bytes;
}

class Cifar10Test : public ::testing::Test {
 protected:
  // Train file k holds k + 1 records, the test file 4.
  void SetUp() override {
    fs::create_directories(src());
    for (int k = 0; k < 5; ++k) write_batch(kCifar10TrainFiles[k], k, k + 1);
    write_batch(kCifar10TestFile, 5, 4);
    write(kCifar10MetaFile, kNames);
  }
  void write_batch(const std::string& name, int file, int records) {
    std::string bytes;
    for (int i = 0; i < records; ++i) bytes += record(file, i);
    write(name, bytes);
  }
  void write(const std::string& name, const std::string& bytes) {
    throw_if_error(write_file_atomically(src(name), bytes));
  }
  std::string src(const std::string& name = "") { return dir_ / ("src/" + name); }
  std::string out() { return dir_ / "out"; }
  Result<Cifar10ImportCounts> import() {
    Cifar10ImportOptions options;
    options.src = src();
    options.out = out();
    options.shard_bytes = 16 << 10;  // a few shards
    return import_cifar10(options);
  }
  void expect_error(const std::string& words) {
    auto result = import();
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find(words), std::string::npos)
        << result.status().message();
    EXPECT_FALSE(fs::exists(out())) << "a failed import left output";
  }
  testing::TempDir dir_;
};

TEST_F(Cifar10Test, RecordsAreTheFilesBytesInOrderWithTheirLabelsAndClassNames) {
  Cifar10ImportCounts counts = import().value_or_throw();
  EXPECT_EQ(counts.train, 1u + 2 + 3 + 4 + 5);
  EXPECT_EQ(counts.test, 4u);
  auto train = Dataset::open(out() + "/train").value_or_throw();
  auto test = Dataset::open(out() + "/test").value_or_throw();
  ASSERT_EQ(train->size(), counts.train);
  ASSERT_EQ(test->size(), counts.test);
  EXPECT_GT(train->num_shards(), 1);
  EXPECT_EQ(train->schema().fields()[0].shape, (std::vector<int64_t>{3, 32, 32}));
  const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                          "dog",      "frog",       "horse", "ship", "truck"};
  EXPECT_EQ(train->manifest().class_names, names);
  EXPECT_EQ(test->manifest().class_names, names);
  const auto check = [](const Dataset& ds, uint64_t index, int file, int i) {
    const std::string expected = record(file, i);
    EXPECT_EQ(std::memcmp(ds.fixed_field(index, 0), expected.data() + 1, 3072), 0);
    int64_t label;
    std::memcpy(&label, ds.fixed_field(index, 1), sizeof label);
    EXPECT_EQ(label, expected[0]);
  };
  uint64_t index = 0;
  for (int k = 0; k < 5; ++k) {
    for (int i = 0; i <= k; ++i) check(*train, index++, k, i);
  }
  for (int i = 0; i < 4; ++i) check(*test, i, 5, i);
}

TEST_F(Cifar10Test, MetaWithWindowsLineEndsAndNoTrailingNewlineIsRead) {
  write(kCifar10MetaFile, "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh\r\ni\r\nj");
  ASSERT_TRUE(import().is_ok());
  auto test = Dataset::open(out() + "/test").value_or_throw();
  EXPECT_EQ(test->manifest().class_names.front(), "a");
  EXPECT_EQ(test->manifest().class_names.back(), "j");
}

TEST_F(Cifar10Test, TruncatedFileIsRefusedNamingIt) {
  std::string bytes = record(2, 0) + record(2, 1) + record(2, 2);
  write(kCifar10TrainFiles[2], bytes.substr(0, bytes.size() - 100));
  expect_error(src(kCifar10TrainFiles[2]) + ": 9119 bytes is not a whole number of 3073-byte");
  write(kCifar10TrainFiles[2], bytes);
  write(kCifar10TestFile, "");
  expect_error(src(kCifar10TestFile) + ": 0 bytes");
}

TEST_F(Cifar10Test, LabelOutOfRangeIsRefusedNamingFileAndRecordAndNothingIsWritten) {
  // In the test file, read after all of train/ has been written to its staging directory.
  std::string bytes = record(5, 0) + record(5, 1) + record(5, 2);
  bytes[2 * kCifar10RecordBytes] = 11;
  write(kCifar10TestFile, bytes);
  expect_error(src(kCifar10TestFile) + ": record 2: label 11 is not one of the 10 classes");
  for (const auto& entry : fs::directory_iterator(dir_.path()))
    EXPECT_EQ(entry.path().filename(), "src") << "left behind: " << entry.path();
}

TEST_F(Cifar10Test, MissingFilesAreNamed) {
  fs::remove(src(kCifar10TrainFiles[4]));
  expect_error(src(kCifar10TrainFiles[4]) + ": no such file");
  fs::remove(src(kCifar10MetaFile));
  expect_error(src(kCifar10MetaFile) + ": no such file");
}

TEST_F(Cifar10Test, BadMetaFilesAreRefused) {
  write(kCifar10MetaFile, "a\nb\nc\nd\ne\nf\ng\nh\ni\n");
  expect_error(src(kCifar10MetaFile) + ": 9 class names, expected 10");
  write(kCifar10MetaFile, "a\nb\n\nd\ne\nf\ng\nh\ni\nj\n");
  expect_error(src(kCifar10MetaFile) + ": line 3 is empty");
  write(kCifar10MetaFile, "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\xff\n");
  expect_error(src(kCifar10MetaFile) + ": line 10 is not UTF-8: j\\xff");
}

TEST_F(Cifar10Test, FilesThatAreNotRegularAreRefusedWithoutBlocking) {
  testing::HangGuard guard;
  fs::remove(src(kCifar10TestFile));
  testing::make_fifo(src(kCifar10TestFile));
  expect_error(src(kCifar10TestFile) + ": not a regular file (a FIFO)");
}

TEST_F(Cifar10Test, ExistingOutputIsRefusedAndKept) {
  fs::create_directories(out() + "/test");
  throw_if_error(write_file_atomically(out() + "/test/keep", "precious"));
  auto result = import();
  EXPECT_EQ(result.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(read_file(out() + "/test/keep").value_or_throw(), "precious");
  EXPECT_FALSE(fs::exists(out() + "/train")) << "train/ was written though test/ exists";
}

}  // namespace
}  // namespace stoker
