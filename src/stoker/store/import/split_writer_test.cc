// SplitWriter: the splits of one import are all in place or none is.
#include "stoker/store/import/split_writer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "stoker/store/dataset.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

class SplitWriterTest : public ::testing::Test {
 protected:
  std::unique_ptr<SplitWriter> create() {
    auto writer =
        SplitWriter::create(out(), {out() + "/train", out() + "/test"}, {"a", "b"}, schema_, {})
            .value_or_throw();
    for (size_t split = 0; split < 2; ++split) {
      for (int64_t v = 0; v < 3; ++v)
        throw_if_error(writer->split(split).append(reinterpret_cast<uint8_t*>(&v), sizeof v));
    }
    return writer;
  }
  std::string out() const { return dir_ / "out"; }

  testing::TempDir dir_;
  Schema schema_ = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
};

TEST_F(SplitWriterTest, FinishPutsEverySplitInPlace) {
  throw_if_error(create()->finish());
  auto train = Dataset::open(out() + "/train").value_or_throw();
  auto test = Dataset::open(out() + "/test").value_or_throw();
  EXPECT_EQ(train->size(), 3u);
  EXPECT_EQ(train->manifest().source, "a");
  EXPECT_EQ(test->manifest().source, "b");
}

TEST_F(SplitWriterTest, AbandonedWriterRemovesTheOutputItMade) {
  create().reset();
  EXPECT_TRUE(fs::is_empty(dir_.path()));
  fs::create_directory(out());  // an existing output directory stays
  create().reset();
  EXPECT_TRUE(fs::is_directory(out()));
  EXPECT_TRUE(fs::is_empty(out()));
}

TEST_F(SplitWriterTest, ALaterSplitFailingToFinishTakesTheEarlierOnesBack) {
  auto writer = create();
  // Something appears where test/ goes after the writers were made: its rename fails.
  fs::create_directories(out() + "/test");
  throw_if_error(write_file_atomically(out() + "/test/keep", "precious"));
  Status status = writer->finish();
  EXPECT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find(out() + "/test"), std::string::npos) << status.message();
  EXPECT_FALSE(fs::exists(out() + "/train"));
  EXPECT_EQ(read_file(out() + "/test/keep").value_or_throw(), "precious");
}

TEST_F(SplitWriterTest, FilesAreWrittenBesideTheSplitsOrNotAtAll) {
  throw_if_error(create()->finish({{"notes.txt", "hello\n"}}));
  EXPECT_EQ(read_file(out() + "/notes.txt").value_or_throw(), "hello\n");
  fs::remove_all(out());
  // A file that cannot be written (its name is taken by a directory) takes the splits back.
  auto writer = create();
  fs::create_directories(out() + "/taken/x");
  Status status = writer->finish({{"first.txt", "1"}, {"taken", "2"}});
  EXPECT_FALSE(status.is_ok());
  EXPECT_FALSE(fs::exists(out() + "/train"));
  EXPECT_FALSE(fs::exists(out() + "/test"));
  EXPECT_FALSE(fs::exists(out() + "/first.txt"));
  EXPECT_TRUE(fs::exists(out() + "/taken/x"));
}

TEST_F(SplitWriterTest, AnExistingSplitIsRefusedAndNothingIsMade) {
  fs::create_directories(out() + "/test");
  auto writer =
      SplitWriter::create(out(), {out() + "/train", out() + "/test"}, {"a", "b"}, schema_, {});
  EXPECT_EQ(writer.status().code(), StatusCode::kAlreadyExists);
  std::vector<fs::path> left;
  for (const auto& entry : fs::directory_iterator(out())) left.push_back(entry.path());
  EXPECT_EQ(left, std::vector<fs::path>{out() + "/test"});
}

}  // namespace
}  // namespace stoker
