#include "stoker/store/import/idx.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>

#include "stoker/store/dataset.h"
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
